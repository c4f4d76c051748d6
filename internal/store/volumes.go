package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Volume is a named, persistent volume of one owner.
type Volume struct {
	Owner      string
	Name       string
	EngineName string
	CreatedAt  time.Time
}

// InsertVolume records v; its name must be free for its owner.
func (s *Store) InsertVolume(ctx context.Context, v Volume) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO volumes (owner, name, engine_name, created_at) VALUES (?, ?, ?, ?)`,
		v.Owner, v.Name, v.EngineName, millis(v.CreatedAt))
	if isUnique(err) {
		return ErrExists
	}
	return err
}

// FindVolume returns owner's volume name.
func (s *Store) FindVolume(ctx context.Context, owner, name string) (Volume, error) {
	var (
		v       Volume
		created int64
	)
	err := s.db.QueryRowContext(ctx, `SELECT owner, name, engine_name, created_at FROM volumes WHERE owner = ? AND name = ?`, owner, name).
		Scan(&v.Owner, &v.Name, &v.EngineName, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Volume{}, ErrNotFound
	}
	v.CreatedAt = fromMillis(created)
	return v, err
}

// Volumes lists owner's volumes by name.
func (s *Store) Volumes(ctx context.Context, owner string) ([]Volume, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT owner, name, engine_name, created_at FROM volumes WHERE owner = ? ORDER BY name`, owner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Volume
	for rows.Next() {
		var (
			v       Volume
			created int64
		)
		if err := rows.Scan(&v.Owner, &v.Name, &v.EngineName, &created); err != nil {
			return nil, err
		}
		v.CreatedAt = fromMillis(created)
		out = append(out, v)
	}
	return out, rows.Err()
}

// DeleteVolume forgets owner's volume name.
func (s *Store) DeleteVolume(ctx context.Context, owner, name string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM volumes WHERE owner = ? AND name = ?`, owner, name)
	return err
}

// Image is an image one owner built through the API.
type Image struct {
	Owner     string
	Name      string
	EngineRef string
	CreatedAt time.Time
}

// PutImage records (or replaces) owner's image name.
func (s *Store) PutImage(ctx context.Context, im Image) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO images (owner, name, engine_ref, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (owner, name) DO UPDATE SET engine_ref = excluded.engine_ref, created_at = excluded.created_at`,
		im.Owner, im.Name, im.EngineRef, millis(im.CreatedAt))
	return err
}

// FindImage returns owner's image name.
func (s *Store) FindImage(ctx context.Context, owner, name string) (Image, error) {
	var (
		im      Image
		created int64
	)
	err := s.db.QueryRowContext(ctx, `SELECT owner, name, engine_ref, created_at FROM images WHERE owner = ? AND name = ?`, owner, name).
		Scan(&im.Owner, &im.Name, &im.EngineRef, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Image{}, ErrNotFound
	}
	im.CreatedAt = fromMillis(created)
	return im, err
}

// Images lists owner's images by name.
func (s *Store) Images(ctx context.Context, owner string) ([]Image, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT owner, name, engine_ref, created_at FROM images WHERE owner = ? ORDER BY name`, owner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Image
	for rows.Next() {
		var (
			im      Image
			created int64
		)
		if err := rows.Scan(&im.Owner, &im.Name, &im.EngineRef, &created); err != nil {
			return nil, err
		}
		im.CreatedAt = fromMillis(created)
		out = append(out, im)
	}
	return out, rows.Err()
}
