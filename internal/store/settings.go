package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// ServerID is this database's server's identity: random, made on first
// use and kept, so that a restarted server knows what it started before.
func (s *Store) ServerID(ctx context.Context) (string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	if _, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO settings (key, value) VALUES ('server_id', ?)`, hex.EncodeToString(b[:])); err != nil {
		return "", fmt.Errorf("the server's identity: %w", err)
	}
	var id string
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = 'server_id'`).Scan(&id); err != nil {
		return "", fmt.Errorf("the server's identity: %w", err)
	}
	return id, nil
}
