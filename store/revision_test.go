package store

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestStampRevision(t *testing.T) {
	tests := []struct {
		name  string
		value string
		rev   int64
		want  string
		err   error
	}{
		{
			name:  "insert first member",
			value: `{"metadata":{"name":"a","namespace":"ns","uid":"u1"},"data":{"k":"v"}}`,
			rev:   7,
			want:  `{"metadata":{"resourceVersion":"7","name":"a","namespace":"ns","uid":"u1"},"data":{"k":"v"}}`,
		},
		{
			name:  "replace existing",
			value: `{"metadata":{"name":"a","resourceVersion":"123","uid":"u"},"data":{}}`,
			rev:   124,
			want:  `{"metadata":{"name":"a","resourceVersion":"124","uid":"u"},"data":{}}`,
		},
		{
			name:  "replace last member",
			value: `{"metadata":{"name":"a","resourceVersion":"1"}}`,
			rev:   9999999999,
			want:  `{"metadata":{"name":"a","resourceVersion":"9999999999"}}`,
		},
		{
			name:  "replace non-string value",
			value: `{"metadata":{"resourceVersion":null,"name":"a"}}`,
			rev:   3,
			want:  `{"metadata":{"resourceVersion":"3","name":"a"}}`,
		},
		{
			name:  "empty metadata",
			value: `{"metadata":{}}`,
			rev:   1,
			want:  `{"metadata":{"resourceVersion":"1"}}`,
		},
		{
			name:  "empty metadata with spaces",
			value: "{ \"metadata\" : { \n } }",
			rev:   1,
			want:  "{ \"metadata\" : {\"resourceVersion\":\"1\" \n } }",
		},
		{
			name:  "whitespace everywhere",
			value: "{\n  \"kind\": \"X\",\n  \"metadata\": {\n    \"resourceVersion\" : \"5\" ,\n    \"name\": \"a\"\n  }\n}",
			rev:   6,
			want:  "{\n  \"kind\": \"X\",\n  \"metadata\": {\n    \"resourceVersion\" : \"6\" ,\n    \"name\": \"a\"\n  }\n}",
		},
		{
			name:  "metadata key inside an earlier string",
			value: `{"note":"\"metadata\":{\"resourceVersion\":\"1\"}","metadata":{"name":"a"}}`,
			rev:   2,
			want:  `{"note":"\"metadata\":{\"resourceVersion\":\"1\"}","metadata":{"resourceVersion":"2","name":"a"}}`,
		},
		{
			name:  "nested metadata in an earlier member",
			value: `{"spec":{"template":{"metadata":{"resourceVersion":"1","labels":{"a":"b"}}}},"metadata":{"name":"a"}}`,
			rev:   8,
			want:  `{"spec":{"template":{"metadata":{"resourceVersion":"1","labels":{"a":"b"}}}},"metadata":{"resourceVersion":"8","name":"a"}}`,
		},
		{
			name:  "nested metadata in an earlier array",
			value: `{"items":[{"metadata":{}},"]}",[[{}]]],"metadata":{"name":"a"}}`,
			rev:   4,
			want:  `{"items":[{"metadata":{}},"]}",[[{}]]],"metadata":{"resourceVersion":"4","name":"a"}}`,
		},
		{
			name:  "nested resourceVersion inside metadata",
			value: `{"metadata":{"annotations":{"resourceVersion":"x"},"name":"a"}}`,
			rev:   5,
			want:  `{"metadata":{"resourceVersion":"5","annotations":{"resourceVersion":"x"},"name":"a"}}`,
		},
		{
			name:  "resourceVersion text in a metadata string",
			value: `{"metadata":{"name":"\"resourceVersion\":\"1\"","resourceVersion":"2"}}`,
			rev:   3,
			want:  `{"metadata":{"name":"\"resourceVersion\":\"1\"","resourceVersion":"3"}}`,
		},
		{
			name:  "escaped backslash before quote",
			value: `{"a":"x\\","metadata":{"name":"b\\\""}}`,
			rev:   1,
			want:  `{"a":"x\\","metadata":{"resourceVersion":"1","name":"b\\\""}}`,
		},
		{
			name:  "unicode and escapes",
			value: `{"désc":"héllo \u00e9 ☃ \ud83d\ude00","metadata":{"name":"ü","labels":{"k":"\u2028"}}}`,
			rev:   10,
			want:  `{"désc":"héllo \u00e9 ☃ \ud83d\ude00","metadata":{"resourceVersion":"10","name":"ü","labels":{"k":"\u2028"}}}`,
		},
		{
			name:  "escaped key spelling metadata",
			value: `{"meta\u0064ata":{"name":"a"}}`,
			rev:   1,
			want:  `{"meta\u0064ata":{"resourceVersion":"1","name":"a"}}`,
		},
		{
			name:  "key containing metadata",
			value: `{"xmetadata":{"name":"x"},"metadatax":{},"metadata":{"name":"a"}}`,
			rev:   2,
			want:  `{"xmetadata":{"name":"x"},"metadatax":{},"metadata":{"resourceVersion":"2","name":"a"}}`,
		},
		{
			name:  "numbers and literals before metadata",
			value: `{"n":-1.5e3,"t":true,"f":false,"z":null,"metadata":{"generation":2}}`,
			rev:   11,
			want:  `{"n":-1.5e3,"t":true,"f":false,"z":null,"metadata":{"resourceVersion":"11","generation":2}}`,
		},
		{name: "no metadata", value: `{"data":{"metadata":{}}}`, err: ErrInvalidObject},
		{name: "metadata not an object", value: `{"metadata":"x"}`, err: ErrInvalidObject},
		{name: "metadata null", value: `{"metadata":null}`, err: ErrInvalidObject},
		{name: "not an object", value: `["metadata",{}]`, err: ErrInvalidObject},
		{name: "empty", value: ``, err: ErrInvalidObject},
		{name: "empty object", value: `{}`, err: ErrInvalidObject},
		{name: "truncated string", value: `{"a":"x`, err: ErrInvalidObject},
		{name: "truncated metadata", value: `{"metadata":{"name":"a"`, err: ErrInvalidObject},
		{name: "trailing comma in metadata", value: `{"metadata":{"name":"a",}}`, err: ErrInvalidObject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StampRevision([]byte(tt.value), tt.rev)
			if !errors.Is(err, tt.err) {
				t.Fatalf("StampRevision() error = %v, want %v", err, tt.err)
			}
			if tt.err != nil {
				return
			}
			if string(got) != tt.want {
				t.Errorf("StampRevision() =\n%s\nwant\n%s", got, tt.want)
			}
			if json.Valid([]byte(tt.value)) && !json.Valid(got) {
				t.Errorf("StampRevision() produced invalid JSON: %s", got)
			}
		})
	}
}

func TestStampRevision_decodes(t *testing.T) {
	// Whatever the input's resourceVersion, a decoder sees rev.
	in := `{"metadata":{"name":"a","resourceVersion":"999"},"data":{"metadata":"` + strings.Repeat("x", 100) + `"}}`
	got, err := StampRevision([]byte(in), 42)
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(got, &obj); err != nil {
		t.Fatal(err)
	}
	if got, want := obj.Metadata.ResourceVersion, "42"; got != want {
		t.Errorf("resourceVersion = %q, want %q", got, want)
	}
}

func TestStampRevision_allocs(t *testing.T) {
	in := []byte(`{"metadata":{"name":"a","namespace":"ns","uid":"u"},"data":{"k":"v"}}`)
	got := testing.AllocsPerRun(100, func() {
		if _, err := StampRevision(in, 123456); err != nil {
			t.Fatal(err)
		}
	})
	if want := 1.0; got != want {
		t.Errorf("allocs = %v, want %v", got, want)
	}
}

func TestEqualStamped(t *testing.T) {
	cur, err := StampRevision([]byte(`{"metadata":{"name":"a"},"x":1}`), 5)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		value string
		want  bool
	}{
		{"same without rv", `{"metadata":{"name":"a"},"x":1}`, true},
		{"same with other rv", `{"metadata":{"resourceVersion":"1","name":"a"},"x":1}`, true},
		{"same with same rv", `{"metadata":{"resourceVersion":"5","name":"a"},"x":1}`, true},
		{"changed", `{"metadata":{"name":"a"},"x":2}`, false},
		{"rv moved", `{"metadata":{"name":"a","resourceVersion":"5"},"x":1}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := locateRevision([]byte(tt.value))
			if err != nil {
				t.Fatal(err)
			}
			if got := equalStamped(cur, []byte(tt.value), loc, 5); got != tt.want {
				t.Errorf("equalStamped() = %v, want %v", got, tt.want)
			}
		})
	}
}
