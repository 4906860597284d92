package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/llmdoctor/llmdoctor/serve/core"
)

// watchStateVersion is the layout of the watch's state file; a file of another
// version is refused rather than guessed at.
const watchStateVersion = 1

// watchState is what the watch remembers between runs and restarts: per
// target, what was last posted (or taken silently as the baseline), the
// change waiting to hold, and the Slack thread its updates go to.
type watchState struct {
	Version int `json:"version"`
	// Saved is when the state was last written.
	Saved time.Time `json:"saved"`
	// Targets are keyed by the target's identity (its labels as JSON).
	Targets map[string]*watchTarget `json:"targets"`
}

// watchTarget is one target's memory.
type watchTarget struct {
	// Name is the target as messages name it ("model m, instance i").
	Name string `json:"name"`
	// Verdict is the last verdict posted, or the one taken silently as the
	// baseline (a healthy target at its first sight); zero when nothing is
	// established yet.
	Verdict core.Verdict `json:"verdict"`
	// PostedAt is when Verdict was posted; zero when it was taken silently.
	PostedAt time.Time `json:"posted_at,omitzero"`
	// Pending is a change seen in Count consecutive runs, not posted yet.
	Pending *core.Verdict `json:"pending,omitempty"`
	Count   int           `json:"count,omitempty"`
	// PendingSince is when Pending was first seen.
	PendingSince time.Time `json:"pending_since,omitzero"`
	// Channel and TS are the Slack message whose thread takes this
	// target's updates while it is not healthy (bot token only).
	Channel string `json:"channel,omitempty"`
	TS      string `json:"ts,omitempty"`
}

func newWatchState() *watchState {
	return &watchState{Version: watchStateVersion, Targets: map[string]*watchTarget{}}
}

// loadWatchState reads the state file. A missing file is a cold start (nil, nil);
// a file that cannot be read or is not a state this version wrote is an
// error, never a silent reset (which would post everything again).
func loadWatchState(path string) (*watchState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("watch state file %s cannot be read: %w", path, watchPathErr(err))
	}
	st := &watchState{}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("watch state file %s is corrupt (%v): move it away to start cold, which posts every unhealthy target again", path, watchJSONErr(err))
	}
	if st.Version != watchStateVersion {
		return nil, fmt.Errorf("watch state file %s has version %d, this llmdoctor reads version %d: move it away to start cold, which posts every unhealthy target again", path, st.Version, watchStateVersion)
	}
	if st.Targets == nil {
		st.Targets = map[string]*watchTarget{}
	}
	for k, t := range st.Targets {
		if t == nil || (t.Pending != nil && t.Count < 1) {
			return nil, fmt.Errorf("watch state file %s is corrupt (target %q has a pending change without a count): move it away to start cold, which posts every unhealthy target again", path, k)
		}
	}
	return st, nil
}

// saveWatchState writes the state atomically: a temporary file in the same
// directory, synced, then renamed over the old one; readable by its owner
// only (it holds Slack message ids and target names).
func saveWatchState(path string, st *watchState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("writing watch state file %s: %w", path, watchPathErr(err))
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()      // the error returned says what went wrong
			_ = os.Remove(tmp) // best effort: a leftover temporary file is harmless
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("writing watch state file %s: %w", path, watchPathErr(err))
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("writing watch state file %s: %w", path, watchPathErr(err))
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing watch state file %s: %w", path, watchPathErr(err))
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing watch state file %s: %w", path, watchPathErr(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing watch state file %s: %w", path, watchPathErr(err))
	}
	ok = true
	// The rename is durable once the directory is synced; not every
	// filesystem can sync a directory, and the file is whole either way.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()  // not every filesystem syncs a directory
		_ = d.Close() // read only
	}
	return nil
}

// probeWatchStateDir checks at startup that the state file's directory takes a
// new file, so that a read-only or missing directory is an error before
// the first post rather than a re-post after the next restart.
func probeWatchStateDir(path string) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".probe*")
	if err != nil {
		return fmt.Errorf("watch state file %s cannot be written: %w", path, watchPathErr(err))
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(f.Name()) // the close's error is the one to tell
		return fmt.Errorf("watch state file %s cannot be written: %w", path, watchPathErr(err))
	}
	if err := os.Remove(f.Name()); err != nil {
		return fmt.Errorf("watch state file %s: its directory takes a new file but cannot remove it: %w", path, watchPathErr(err))
	}
	return nil
}

// sortedKeys are the state's targets in a stable order.
func (st *watchState) sortedKeys() []string {
	keys := make([]string, 0, len(st.Targets))
	for k := range st.Targets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// watchPathErr is an error without the path it repeats (the message names it).
func watchPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// watchJSONErr says where JSON went wrong.
func watchJSONErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s holds a %s, not a %s", te.Field, te.Value, te.Type)
	}
	return err.Error()
}
