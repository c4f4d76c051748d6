package session

import (
	"strings"
	"testing"
)

func TestProbeAndCommands(t *testing.T) {
	for out, want := range map[string]Connector{"socat\n": Socat, "nc-N\n": NCShutdown, "nc": NC, "bash\n": Bash} {
		if c, ok := ParseProbe(out); !ok || c != want {
			t.Errorf("ParseProbe(%q) = %q %v", out, c, ok)
		}
	}
	if _, ok := ParseProbe("sh: 1: not found\n"); ok {
		t.Error("garbage parsed as a connector")
	}
	for _, c := range []Connector{Socat, NC, NCShutdown, Bash} {
		cmd := strings.Join(c.Command(2222), " ")
		if !strings.Contains(cmd, "127.0.0.1") || !strings.Contains(cmd, "2222") {
			t.Errorf("%s dials %q", c, cmd)
		}
	}
	if got := Order; len(got) != 3 || got[0] != Socat || got[1] != NC || got[2] != Bash {
		t.Errorf("the seed's order is socat, nc, bash; have %v", got)
	}
}

func TestSocatNotices(t *testing.T) {
	eof := "2026/11/29 08:34:00 socat[6310] N socket 2 (fd 5) is at EOF\n"
	if !PortEOF(Socat, eof) || PortEOF(NC, eof) {
		t.Error("PortEOF")
	}
	if PortEOF(Socat, "2026/11/29 08:34:03 socat[6310] N socket 1 (fd 0) is at EOF\n") {
		t.Error("stdin's EOF taken for the port's")
	}
	if !Notice(Socat, "2026/11/29 socat[1] N opening connection to AF=2 127.0.0.1:22\n") {
		t.Error("notice")
	}
	if Notice(Socat, "2026/11/29 socat[1] E connect(5, AF=2 127.0.0.1:22, 16): Connection refused\n") {
		t.Error("an error taken for a notice")
	}
	if !Refused("bash: connect: Connection refused") {
		t.Error("Refused")
	}
}

func TestEncodeDecode(t *testing.T) {
	msg := Encode(KindExit, Exit{Code: 3, Error: "e"})
	if msg[0] != KindExit {
		t.Fatal("kind byte")
	}
	var ex Exit
	if err := Decode(msg, &ex); err != nil || ex.Code != 3 || ex.Error != "e" {
		t.Fatalf("%+v %v", ex, err)
	}
	if err := Decode(nil, &ex); err == nil {
		t.Fatal("empty message decoded")
	}
}
