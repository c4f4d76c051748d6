package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestTokens(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "db"))
	rec, secret, err := s.CreateToken(ctx, "alice", "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, TokenPrefix+rec.ID+"_") {
		t.Fatalf("token %q does not carry its ID", secret)
	}
	got, err := s.Authenticate(ctx, secret)
	if err != nil || got.Owner != "alice" || got.ID != rec.ID {
		t.Fatalf("Authenticate: %+v %v", got, err)
	}
	for _, bad := range []string{"", "chalk_", secret + "x", secret[:len(secret)-1], "chalk_" + rec.ID + "_", strings.Replace(secret, rec.ID, "0000000000000000", 1), "Bearer " + secret} {
		if _, err := s.Authenticate(ctx, bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("Authenticate(%q) = %v, want ErrNotFound", bad, err)
		}
	}
	if err := s.RevokeToken(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a revoked token authenticates: %v", err)
	}
	if err := s.RevokeToken(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke of an unknown token: %v", err)
	}
	ts, err := s.Tokens(ctx)
	if err != nil || len(ts) != 1 || ts[0].RevokedAt.IsZero() {
		t.Fatalf("Tokens: %+v %v", ts, err)
	}
}

// TestSecretsNotStored: the database holds no token in the clear.
func TestSecretsNotStored(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "db"))
	_, secret, err := s.CreateToken(ctx, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	_, tail, _ := strings.Cut(strings.TrimPrefix(secret, TokenPrefix), "_")
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM tokens WHERE instr(CAST(hash AS TEXT), ?) > 0 OR instr(name, ?) > 0`, tail, tail).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("the token's secret is in the database")
	}
}

func TestContainersPerOwner(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path)
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := Container{ID: NewID(), Owner: "alice", Name: "box", Image: "img", ComputeClass: "host", CreatedAt: now, ExpiresAt: now.Add(time.Hour), State: StateRunning,
		Spec: Spec{Env: []string{"A=1"}, Volumes: []Mount{{Volume: "v", Path: "/v"}}}}
	if err := s.InsertContainer(ctx, a); err != nil {
		t.Fatal(err)
	}
	dup := a
	dup.ID = NewID()
	if err := s.InsertContainer(ctx, dup); !errors.Is(err, ErrExists) {
		t.Fatalf("same name, same owner: %v", err)
	}
	b := dup
	b.Owner = "bob"
	if err := s.InsertContainer(ctx, b); err != nil {
		t.Fatalf("same name, another owner: %v", err)
	}
	for _, ref := range []string{a.ID, "box"} {
		got, err := s.FindContainer(ctx, "alice", ref)
		if err != nil || got.ID != a.ID || got.Spec.Env[0] != "A=1" || !got.ExpiresAt.Equal(a.ExpiresAt) {
			t.Fatalf("FindContainer(%s): %+v %v", ref, got, err)
		}
	}
	if _, err := s.FindContainer(ctx, "bob", a.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob finds alice's container by ID: %v", err)
	}
	// A restart: everything is still there.
	s.Close()
	s2 := open(t, path)
	all, err := s2.Containers(ctx, "")
	if err != nil || len(all) != 2 {
		t.Fatalf("after reopening: %d containers, %v", len(all), err)
	}
	mine, _ := s2.Containers(ctx, "alice")
	if len(mine) != 1 || mine[0].ID != a.ID {
		t.Fatalf("alice's: %+v", mine)
	}
}

func TestNewIDIsUUID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		id := NewID()
		if len(id) != 36 || id[14] != '4' || strings.Count(id, "-") != 4 || seen[id] {
			t.Fatalf("bad or repeated ID %q", id)
		}
		seen[id] = true
	}
}

// TestExpired: only running containers whose lifetime has ended, at the
// deadline included, are listed.
func TestExpired(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "db"))
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i, c := range []struct {
		name, state string
		expires     time.Time
	}{
		{"past", StateRunning, now.Add(-time.Minute)},
		{"due", StateRunning, now},
		{"future", StateRunning, now.Add(time.Millisecond)},
		{"stopped", StateStopped, now.Add(-time.Minute)},
	} {
		created := now.Add(-time.Hour + time.Duration(i)*time.Second) // listed in this order
		if err := s.InsertContainer(ctx, Container{ID: NewID(), Owner: "alice", Name: c.name, Image: "img", ComputeClass: "host",
			CreatedAt: created, ExpiresAt: c.expires, State: c.state}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Expired(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
	}
	if strings.Join(names, " ") != "past due" {
		t.Fatalf("expired: %q, want past and due", names)
	}
}

// TestServerIDKept: the identity is made once and survives a reopen;
// another database has another.
func TestServerIDKept(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "db")
	a := open(t, path)
	first, err := a.ServerID(ctx)
	if err != nil || len(first) != 16 {
		t.Fatalf("ServerID: %q, %v", first, err)
	}
	again, _ := a.ServerID(ctx)
	a.Close()
	reopened, _ := open(t, path).ServerID(ctx)
	other, _ := open(t, filepath.Join(dir, "other")).ServerID(ctx)
	if again != first || reopened != first || other == first {
		t.Fatalf("first %q, again %q, after reopening %q, another database %q", first, again, reopened, other)
	}
}
