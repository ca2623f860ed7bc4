package main

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestParseMigrateLocation(t *testing.T) {
	tests := []struct {
		in      string
		want    migrateLocation
		wantErr bool
	}{
		{in: "sqlite:/var/lib/edgeapi", want: migrateLocation{kind: "sqlite", dir: "/var/lib/edgeapi"}},
		{in: "sqlite:rel/dir", want: migrateLocation{kind: "sqlite", dir: "rel/dir"}},
		{in: "etcd:http://127.0.0.1:2379", want: migrateLocation{kind: "etcd", endpoints: []string{"http://127.0.0.1:2379"}}},
		{in: "etcd:https://a:2379,https://b:2379", want: migrateLocation{kind: "etcd", endpoints: []string{"https://a:2379", "https://b:2379"}}},
		{in: "etcd:https://a:2379,", wantErr: true},
		{in: "sqlite:", wantErr: true},
		{in: "/var/lib/edgeapi", wantErr: true},
		{in: "postgres://x", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseMigrateLocation(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseMigrateLocation(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseMigrateLocation(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if !tt.wantErr && got.String() != tt.in {
			t.Errorf("parseMigrateLocation(%q).String() = %q", tt.in, got.String())
		}
	}
}

func TestMigrateLocations(t *testing.T) {
	tests := []struct {
		from, to string
		wantErr  bool
	}{
		{"sqlite:/a", "etcd:http://e:2379", false},
		{"etcd:http://e:2379", "sqlite:/a", false},
		{"sqlite:/a", "sqlite:/b", true},
		{"etcd:http://e:2379", "etcd:http://f:2379", true},
		{"", "sqlite:/b", true},
		{"sqlite:/a", "", true},
	}
	for _, tt := range tests {
		_, _, err := migrateLocations(tt.from, tt.to)
		if (err != nil) != tt.wantErr {
			t.Errorf("migrateLocations(%q, %q) error = %v, want error %v", tt.from, tt.to, err, tt.wantErr)
		}
	}
}

// TestRunMigrate_build: the default build names the build that has the
// etcd backend; the etcd build gets past that to its flags.
func TestRunMigrate_build(t *testing.T) {
	err := runMigrate(context.Background(), []string{"--from", "sqlite:/nonexistent", "--to", "sqlite:/also"})
	if got := errors.Is(err, errMigrateNoEtcd); got != !migrateEtcdBuilt {
		t.Errorf("runMigrate in a build with etcd %v = %v; want the no-etcd error %v", migrateEtcdBuilt, err, !migrateEtcdBuilt)
	}
	if migrateEtcdBuilt && !isUsageError(err) {
		t.Errorf("runMigrate sqlite to sqlite = %v, want a usage error", err)
	}
}
