package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Container states.
const (
	StateCreating = "creating"
	StateRunning  = "running"
	StateStopped  = "stopped"
	StateExited   = "exited"
	StateFailed   = "failed"
)

// Spec is what a container was asked to run with.
type Spec struct {
	Entrypoint  []string `json:"entrypoint,omitempty"`
	Command     []string `json:"command,omitempty"`
	Env         []string `json:"env,omitempty"`
	CPUs        float64  `json:"cpus,omitempty"`
	MemoryBytes int64    `json:"memory_bytes,omitempty"`
	Volumes     []Mount  `json:"volumes,omitempty"`
}

// Mount puts a named volume at a path in the container.
type Mount struct {
	Volume string `json:"volume"`
	Path   string `json:"path"`
}

// Container is one API container.
type Container struct {
	ID           string
	Owner        string
	Name         string
	Image        string
	ComputeClass string
	Spec         Spec
	CreatedAt    time.Time
	ExpiresAt    time.Time
	EngineID     string
	State        string
	Reason       string
}

// NewID returns a random (version 4) UUID, the form container IDs take.
func NewID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// InsertContainer records c; its name must be free for its owner.
func (s *Store) InsertContainer(ctx context.Context, c Container) error {
	spec, err := json.Marshal(c.Spec)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO containers
		(id, owner, name, image, compute_class, spec, created_at, expires_at, engine_id, state, reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.Owner, c.Name, c.Image, c.ComputeClass, string(spec), millis(c.CreatedAt), millis(c.ExpiresAt), c.EngineID, c.State, c.Reason)
	if isUnique(err) {
		return ErrExists
	}
	return err
}

// SetContainerState records the engine's ID, the state and why.
func (s *Store) SetContainerState(ctx context.Context, id, engineID, state, reason string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE containers SET engine_id = ?, state = ?, reason = ? WHERE id = ?`, engineID, state, reason, id)
	return err
}

// DeleteContainer forgets the container id.
func (s *Store) DeleteContainer(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM containers WHERE id = ?`, id)
	return err
}

const containerCols = `id, owner, name, image, compute_class, spec, created_at, expires_at, engine_id, state, reason`

func scanContainer(row interface{ Scan(...any) error }) (Container, error) {
	var (
		c                Container
		spec             string
		created, expires int64
	)
	if err := row.Scan(&c.ID, &c.Owner, &c.Name, &c.Image, &c.ComputeClass, &spec, &created, &expires, &c.EngineID, &c.State, &c.Reason); err != nil {
		return Container{}, err
	}
	if err := json.Unmarshal([]byte(spec), &c.Spec); err != nil {
		return Container{}, fmt.Errorf("container %s: bad spec in the database: %w", c.ID, err)
	}
	c.CreatedAt, c.ExpiresAt = fromMillis(created), fromMillis(expires)
	return c, nil
}

// FindContainer returns owner's container whose ID or name is ref.
func (s *Store) FindContainer(ctx context.Context, owner, ref string) (Container, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+containerCols+` FROM containers
		WHERE owner = ? AND (id = ? OR name = ?) ORDER BY id = ? DESC LIMIT 1`, owner, ref, ref, ref)
	c, err := scanContainer(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Container{}, ErrNotFound
	}
	return c, err
}

// Containers lists owner's containers, oldest first; owner "" lists all.
func (s *Store) Containers(ctx context.Context, owner string) ([]Container, error) {
	return s.containers(ctx, `WHERE ? = '' OR owner = ?`, owner, owner)
}

// Expired lists the running containers whose lifetime has ended by now,
// oldest first.
func (s *Store) Expired(ctx context.Context, now time.Time) ([]Container, error) {
	return s.containers(ctx, `WHERE state = ? AND expires_at <= ?`, StateRunning, millis(now))
}

func (s *Store) containers(ctx context.Context, where string, args ...any) ([]Container, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+containerCols+` FROM containers `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Container
	for rows.Next() {
		c, err := scanContainer(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
