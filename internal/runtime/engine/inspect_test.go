package engine

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chalk-rl/chalk/internal/runtime"
	"github.com/chalk-rl/chalk/internal/testenv"
)

func TestParseInspect(t *testing.T) {
	out := "c1\t/box-1\tchalk:abc\ttrue\t{\"dev.chalk.run\":\"r1\"}\n" +
		"\n" + // docker's line for a container it did not find
		"c2\tbox-2\tchalk:abc\tfalse\tnull\n"
	infos, err := parseInspect([]byte(out))
	require.NoError(t, err)
	require.Equal(t, []runtime.SandboxInfo{
		{ID: "c1", Name: "box-1", Image: "chalk:abc", Running: true, Labels: map[string]string{"dev.chalk.run": "r1"}},
		{ID: "c2", Name: "box-2", Image: "chalk:abc"},
	}, infos)

	infos, err = parseInspect(nil)
	require.NoError(t, err)
	require.Empty(t, infos)

	_, err = parseInspect([]byte("c1\tbox-1\n"))
	require.ErrorContains(t, err, `unexpected answer "c1\tbox-1"`)
	_, err = parseInspect([]byte("c1\tbox-1\tchalk:abc\ttrue\t{not json\n"))
	require.ErrorContains(t, err, "labels of c1")
}

// List asks about every sandbox in one inspect, and keeps the ones the
// client found when others went away after ps.
func TestListInspectsOnce(t *testing.T) {
	e, log := fakeClient(t, `case "$1" in
ps) printf 'c1\nc2\nc3\n' ;;
inspect)
	printf 'c1\tbox-1\tchalk:abc\ttrue\t{}\n'
	printf 'c3\tbox-3\tchalk:abc\tfalse\t{}\n'
	echo 'Error response from daemon: No such container: c2' >&2
	exit 1 ;;
esac`)
	boxes, err := e.List(context.Background(), map[string]string{"dev.chalk.run": "r1"})
	require.NoError(t, err)
	require.Equal(t, []string{"c1", "c3"}, ids(boxes))
	c := calls(t, log)
	require.Len(t, c, 2, "one ps and one inspect: %q", c)
	require.True(t, strings.HasPrefix(c[1], "inspect --type container --format "), c[1])
	require.True(t, strings.HasSuffix(c[1], " c1 c2 c3"), c[1])
}

func calls(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func ids(boxes []runtime.SandboxInfo) []string {
	var out []string
	for _, b := range boxes {
		out = append(out, b.ID)
	}
	return out
}

// The real docker: a sandbox removed between ps and inspect (by the
// stand-in, just before it inspects) is left out, and the rest is listed.
func TestDockerListWhenOneVanishes(t *testing.T) {
	e := docker(t)
	image := testenv.BaseImage(t)
	ctx := context.Background()
	label := randomName("dev.chalk.enginetest.")
	var created []string
	for range 3 {
		id, err := e.Create(ctx, runtime.SandboxSpec{Image: image, Labels: map[string]string{label: "1"}, Entrypoint: []string{"true"}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.Remove(context.Background(), id) })
		created = append(created, id)
	}
	_, log := testenv.StandIns(t, "testdata/fake", []string{"docker"}, os.Getenv("PATH"))
	t.Setenv("FAKE_VANISH", created[1])

	boxes, err := e.List(ctx, map[string]string{label: "1"})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{created[0], created[2]}, ids(boxes))
	for _, b := range boxes {
		require.Equal(t, "1", b.Labels[label])
		require.Equal(t, image, b.Image)
		require.False(t, b.Running)
	}
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(b), "docker inspect "), "one inspect for all sandboxes:\n%s", b)
}
