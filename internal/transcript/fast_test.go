package transcript

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The fast encoding of output events is what encoding/json writes.
func TestMarshalOutputMatchesEncodingJSON(t *testing.T) {
	texts := []string{
		"", "hello\n", "tab\there \"quoted\" back\\slash", "<script>alert(1)</script> & more",
		"\x00\x01\x1f\x7f", "naïve – 日本語 🎉", "sep\u2028para\u2029", string([]byte{0xff, 'a'}),
	}
	for _, text := range texts {
		e := Event{V: Version, Seq: 42, Time: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC), Type: Output,
			Process: "student", Stream: "stdout", Text: text}
		fast, ok := marshalOutput(e)
		if !ok {
			t.Fatalf("%q: not taken by the fast path", text)
		}
		slow, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if string(fast) != string(slow)+"\n" {
			t.Errorf("%q:\nfast %s\njson %s", text, fast, slow)
		}
		var back Event
		if err := json.Unmarshal(fast, &back); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if utf8.ValidString(text) && back.Text != text {
			t.Errorf("%q read back as %q", text, back.Text)
		}
	}
	// Base64 output, and an event with any other field, too.
	e := Event{V: Version, Seq: 1, Type: Output, Process: "grader", Stream: "stderr"}
	e.SetData([]byte{0xff, 0xfe, 0})
	fast, _ := marshalOutput(e)
	slow, _ := json.Marshal(e)
	if string(fast) != string(slow)+"\n" {
		t.Errorf("base64:\nfast %s\njson %s", fast, slow)
	}
	if _, ok := marshalOutput(Event{Type: Output, Message: "x"}); ok {
		t.Error("an output event with a message took the fast path")
	}
}

func FuzzMarshalOutput(f *testing.F) {
	f.Add("hello\n<&>\u2028")
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return
		}
		e := Event{V: Version, Seq: 7, Type: Output, Process: "student", Stream: "stdout", Text: text}
		fast, ok := marshalOutput(e)
		slow, _ := json.Marshal(e)
		if !ok || string(fast) != string(slow)+"\n" {
			t.Fatalf("fast %s\njson %s", fast, slow)
		}
	})
}

// EmitRaw renumbers an encoded event and writes the rest as it is.
func TestEmitRaw(t *testing.T) {
	var buf strings.Builder
	w := NewWriter(&buf)
	if err := w.Emit(Event{Type: Note, Message: "first"}); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`{"v":1,"seq":41,"time":"2026-01-01T00:00:00Z","type":"output","process":"student","stream":"stdout","text":"a"}`,
		`{"v":1,"seq":42,"time":"2026-01-01T00:00:00Z","type":"output","process":"student","stream":"stdout","text":"` + strings.Repeat("b", 10000) + `"}` + "\n",
	} {
		h, ok := ReadHeader([]byte(line))
		if !ok || h.Type != Output || h.Process != "student" || h.Stream != "stdout" {
			t.Fatalf("header %+v %v", h, ok)
		}
		if _, err := w.EmitRaw([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.EmitRaw([]byte(`{"type":"note"}`)); err == nil {
		t.Fatal("a line of another shape was taken")
	}
	events, err := readAll(buf.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || events[1].Seq != 2 || events[2].Seq != 3 || events[1].Text != "a" || len(events[2].Text) != 10000 {
		t.Fatalf("%+v", events)
	}
}

func readAll(s string) ([]Event, error) {
	r := NewReader(strings.NewReader(s))
	var out []Event
	for {
		e, err := r.Next()
		if err != nil {
			if err.Error() == "EOF" {
				return out, nil
			}
			return nil, err
		}
		out = append(out, e)
	}
}
