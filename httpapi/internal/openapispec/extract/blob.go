package extract

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// Blob is one compact JSON value of the data (a path item, a schema). The
// data file keeps blobs out of its JSON header, so that reading the file
// parses only the header (names and keys) and slices the blobs, instead
// of scanning 1.7 MB of JSON.
//
// The file is a uvarint count of blobs, each blob as a uvarint length and
// its bytes, then the header: Data in JSON with each Blob written as its
// index.
type Blob []byte

// blobTable is the table Blob's JSON methods write to and read from while
// Encode or Decode runs (blobMu held).
var (
	blobMu    sync.Mutex
	blobTable [][]byte
)

// MarshalJSON writes b's index in the blob table (Encode only).
func (b Blob) MarshalJSON() ([]byte, error) {
	if blobTable == nil {
		return nil, errors.New("blob marshalled outside Encode")
	}
	blobTable = append(blobTable, b)
	return strconv.AppendInt(nil, int64(len(blobTable)-1), 10), nil
}

// UnmarshalJSON reads a blob index (Decode only).
func (b *Blob) UnmarshalJSON(p []byte) error {
	i, err := strconv.Atoi(string(p))
	if err != nil || i < 0 || i >= len(blobTable) {
		return fmt.Errorf("bad blob reference %q", p)
	}
	*b = blobTable[i]
	return nil
}

// Encode returns the data file's bytes.
func Encode(d *Data) ([]byte, error) {
	blobMu.Lock()
	defer blobMu.Unlock()
	blobTable = [][]byte{}
	defer func() { blobTable = nil }()
	header, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("marshal data: %w", err)
	}
	var buf bytes.Buffer
	buf.Write(binary.AppendUvarint(nil, uint64(len(blobTable))))
	for _, b := range blobTable {
		buf.Write(binary.AppendUvarint(nil, uint64(len(b))))
		buf.Write(b)
	}
	buf.Write(header)
	return buf.Bytes(), nil
}

// Decode reads a data file; the blobs are slices of b.
func Decode(b []byte) (*Data, error) {
	blobMu.Lock()
	defer blobMu.Unlock()
	defer func() { blobTable = nil }()
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errors.New("decode openapi data: bad blob count")
	}
	b = b[k:]
	blobTable = make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, errors.New("decode openapi data: bad blob length")
		}
		blobTable = append(blobTable, b[k:k+int(l)])
		b = b[k+int(l):]
	}
	var d Data
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("decode openapi data: %w", err)
	}
	return &d, nil
}
