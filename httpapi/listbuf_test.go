package httpapi

import "testing"

func TestGetListBuf(t *testing.T) {
	tests := []struct {
		name    string
		pooled  int // capacity of a buffer put back first (0: none)
		size    int
		wantCap int
		reuse   bool
	}{
		{name: "rounded up", size: 700 << 10, wantCap: 1 << 20},
		{name: "a power of two", size: 64 << 10, wantCap: 64 << 10},
		{name: "pooled, large enough", pooled: 1 << 20, size: 720 << 10, wantCap: 1 << 20, reuse: true},
		{name: "pooled, too small", pooled: 512 << 10, size: 720 << 10, wantCap: 1 << 20},
		{name: "past the pooled bound", size: maxPooledListBuf + 1, wantCap: maxPooledListBuf + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var put []byte
			if tt.pooled > 0 {
				put = make([]byte, 100, tt.pooled)
				putListBuf(put)
			}
			got := getListBuf(tt.size)
			if len(got) != 0 || cap(got) != tt.wantCap {
				t.Errorf("getListBuf(%d) len %d cap %d, want len 0 cap %d", tt.size, len(got), cap(got), tt.wantCap)
			}
			// The pool may drop what it is given (the race detector
			// makes it do so at random): reuse is checked only if seen.
			if reused := put != nil && cap(got) == cap(put) && &got[:1][0] == &put[0]; reused && !tt.reuse {
				t.Errorf("getListBuf(%d) reused the pooled buffer of cap %d, want a new one", tt.size, tt.pooled)
			}
		})
	}
	{
		b := make([]byte, 0, maxPooledListBuf+1)
		putListBuf(b)
		if got := getListBuf(1); cap(got) == cap(b) {
			t.Errorf("getListBuf(1) returned a buffer of cap %d, past the pooled bound", cap(got))
		}
	}
}
