package xrt

import "testing"

func TestUUIDString(t *testing.T) {
	u := UUID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	if got, want := u.String(), "01234567-89ab-cdef-fedc-ba9876543210"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	if !(UUID{}).IsZero() || u.IsZero() {
		t.Fatal("IsZero")
	}
}

func TestStrings(t *testing.T) {
	for v, want := range map[string]string{
		BOP2P.String(): "p2p", BOFlags(3).String(): "BOFlags(0x3)", ToDevice.String(): "to-device",
		StateCompleted.String(): "completed", State(42).String(): "State(42)", SyncDir(5).String(): "SyncDir(5)",
	} {
		if v != want {
			t.Errorf("%q, want %q", v, want)
		}
	}
}
