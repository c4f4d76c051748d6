package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Token is a bearer token's record. The secret itself is never stored:
// only its SHA-256.
type Token struct {
	ID        string
	Owner     string
	Name      string
	CreatedAt time.Time
	RevokedAt time.Time
}

// TokenPrefix starts every token, so that a leaked one is recognisable.
const TokenPrefix = "chalk_"

// CreateToken makes a token for owner and returns its record and the
// secret to hand to the person, once.
func (s *Store) CreateToken(ctx context.Context, owner, name string) (Token, string, error) {
	id := randomHex(8)
	secret := randomHex(32)
	sum := sha256.Sum256([]byte(secret))
	t := Token{ID: id, Owner: owner, Name: name, CreatedAt: time.Now().UTC()}
	_, err := s.db.ExecContext(ctx, `INSERT INTO tokens (id, owner, name, hash, created_at) VALUES (?, ?, ?, ?, ?)`,
		id, owner, name, sum[:], millis(t.CreatedAt))
	if err != nil {
		return Token{}, "", fmt.Errorf("create token: %w", err)
	}
	return t, TokenPrefix + id + "_" + secret, nil
}

// Authenticate returns the live token that secret is, or ErrNotFound.
func (s *Store) Authenticate(ctx context.Context, bearer string) (Token, error) {
	rest, ok := strings.CutPrefix(bearer, TokenPrefix)
	if !ok {
		return Token{}, ErrNotFound
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok || id == "" || secret == "" {
		return Token{}, ErrNotFound
	}
	var (
		t       Token
		hash    []byte
		created int64
		revoked sql.NullInt64
	)
	err := s.db.QueryRowContext(ctx, `SELECT id, owner, name, hash, created_at, revoked_at FROM tokens WHERE id = ?`, id).
		Scan(&t.ID, &t.Owner, &t.Name, &hash, &created, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, ErrNotFound
	}
	if err != nil {
		return Token{}, err
	}
	sum := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(sum[:], hash) != 1 || revoked.Valid {
		return Token{}, ErrNotFound
	}
	t.CreatedAt = fromMillis(created)
	return t, nil
}

// RevokeToken revokes the token id. Revoking twice is not an error.
func (s *Store) RevokeToken(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, millis(time.Now()), id)
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// Tokens lists every token, oldest first.
func (s *Store) Tokens(ctx context.Context) ([]Token, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, owner, name, created_at, revoked_at FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		var (
			t       Token
			created int64
			revoked sql.NullInt64
		)
		if err := rows.Scan(&t.ID, &t.Owner, &t.Name, &created, &revoked); err != nil {
			return nil, err
		}
		t.CreatedAt = fromMillis(created)
		if revoked.Valid {
			t.RevokedAt = fromMillis(revoked.Int64)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
