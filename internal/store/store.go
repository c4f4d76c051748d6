// Package store is the Chalk API server's state: tokens, containers,
// volumes and images, kept in an embedded SQLite database (a pure-Go
// driver, so the binary stays static). Everything the server knows
// survives a restart.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrNotFound is returned when a lookup matches nothing the owner may see.
var ErrNotFound = errors.New("not found")

// ErrExists is returned when a name is already taken for the owner.
var ErrExists = errors.New("already exists")

// Store is the server's database.
type Store struct {
	db *sql.DB
}

const schema = `
CREATE TABLE IF NOT EXISTS tokens (
	id         TEXT PRIMARY KEY,
	owner      TEXT NOT NULL,
	name       TEXT NOT NULL,
	hash       BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	revoked_at INTEGER
);
CREATE TABLE IF NOT EXISTS containers (
	id            TEXT PRIMARY KEY,
	owner         TEXT NOT NULL,
	name          TEXT NOT NULL,
	image         TEXT NOT NULL,
	compute_class TEXT NOT NULL,
	spec          TEXT NOT NULL,
	created_at    INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL,
	engine_id     TEXT NOT NULL DEFAULT '',
	state         TEXT NOT NULL,
	reason        TEXT NOT NULL DEFAULT '',
	UNIQUE (owner, name)
);
CREATE TABLE IF NOT EXISTS volumes (
	owner       TEXT NOT NULL,
	name        TEXT NOT NULL,
	engine_name TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (owner, name)
);
CREATE TABLE IF NOT EXISTS settings (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS images (
	owner      TEXT NOT NULL,
	name       TEXT NOT NULL,
	engine_ref TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (owner, name)
);
`

// Open opens (creating if needed) the database file at path.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open the database: %w", err)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open the database %s: %w", path, err)
	}
	// One writer at a time is all SQLite allows; one connection keeps
	// it simple and is plenty for a control plane.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open the database %s: %w", path, err)
	}
	_ = os.Chmod(path, 0o600)
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}
