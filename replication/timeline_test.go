package replication

import (
	"reflect"
	"testing"
)

func TestParseTimelineHistory(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []TimelineSwitch
		wantErr bool
	}{
		{name: "empty", content: "", want: nil},
		{name: "one ancestor", content: "1\t0/3000160\tno recovery target specified\n",
			want: []TimelineSwitch{{Parent: 1, At: 0x3000160}}},
		{name: "two ancestors, comments and blank lines",
			content: "# written by hand\n1\t0/3000160\tno recovery target specified\n\n2\t1/A0000000\tbefore 2026-01-01 00:00:00+00\n",
			want:    []TimelineSwitch{{Parent: 1, At: 0x3000160}, {Parent: 2, At: 0x1A0000000}}},
		{name: "no reason", content: "3\t0/5000000", want: []TimelineSwitch{{Parent: 3, At: 0x5000000}}},
		{name: "no switch point", content: "1\n", wantErr: true},
		{name: "bad timeline", content: "x\t0/3000160\treason\n", wantErr: true},
		{name: "negative timeline", content: "-1\t0/3000160\treason\n", wantErr: true},
		{name: "bad switch point", content: "1\t3000160\treason\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTimelineHistory([]byte(tt.content))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSwitchPoint(t *testing.T) {
	h := []TimelineSwitch{{Parent: 1, At: 0x3000160}, {Parent: 2, At: 0x5000000}}
	tests := []struct {
		tli    int32
		want   uint64
		wantOK bool
	}{
		{tli: 1, want: 0x3000160, wantOK: true},
		{tli: 2, want: 0x5000000, wantOK: true},
		{tli: 3, wantOK: false},
	}
	for _, tt := range tests {
		got, ok := SwitchPoint(h, tt.tli)
		if uint64(got) != tt.want || ok != tt.wantOK {
			t.Errorf("SwitchPoint(h, %d) = %s, %v; want %X, %v", tt.tli, got, ok, tt.want, tt.wantOK)
		}
	}
}
