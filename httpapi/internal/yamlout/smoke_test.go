package yamlout

import "testing"

func TestSmoke(t *testing.T) {
	for _, s := range []string{`{"a":1,"b":[1,2,{"c":"x y"}],"e":{},"f":[],"g":"multi\nline\n","h":"true","i":null}`, `"abc"`, `[[1,[2]],[]]`, `{"kind":"ConfigMap","data":{"a":"b","n":"1"},"list":[1,2.5,true,null]}`} {
		got, err := Append(nil, []byte(s))
		want, werr := reference([]byte(s))
		if string(got) != string(want) {
			t.Errorf("%s: got\n%s(%v)\nwant\n%s(%v)", s, got, err, want, werr)
		}
	}
}
