package fsafe

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Every file slogate writes goes through WriteFile (whole files: records, baselines,
// the gate's result, reports) or Create (streams: the journal, an engine's log). Neither
// follows a symbolic link at the path it writes, and neither writes into, or replaces,
// anything but a regular file: a link, a named pipe, a device, a socket or a directory
// at that path is refused with a *NotRegularError naming it, and left as it was. A link
// followed would write a file of whoever made the link's choosing; a rename over a
// device replaces the device. The directories above the path are followed as usual: the
// caller chose them.

// CheckWritable checks, before anything is measured, that WriteFile(path) can succeed:
// path is absent or a regular file, and its directory (created if needed) takes a file.
func CheckWritable(path string) error {
	if err := CheckPath(path); err != nil {
		return err
	}
	return ProbeDir(filepath.Dir(path))
}

// CheckPath checks that WriteFile and Create would write path: it is absent or a
// regular file (a symbolic link is not).
func CheckPath(path string) error { return notOther(path) }

// CheckOwnDir checks that dir is absent or a directory itself, not a symbolic link to
// one: a directory slogate makes for its own files, or one a checkout under review
// provides, must not send them elsewhere.
func CheckOwnDir(dir string) error { return absentOr(dir, true) }

// ProbeDir checks that files can be written in dir, created if needed: a small file is
// written, flushed and removed. dir must be a directory (a link to one is followed).
func ProbeDir(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return &NotRegularError{Path: dir, Mode: st.Mode(), Writing: true, WantDir: true}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".slogate-probe.*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write([]byte("probe\n")); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteFile writes data to path whole or not at all: a temporary file in path's
// directory (created if needed), flushed to disk, then renamed over path, so that a
// reader or a crash never sees half a file. The temporary name starts with a dot and
// ends in .tmp, so that no reader takes a leftover for a record.
func WriteFile(path string, data []byte) error {
	if err := notOther(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	// Once more just before the rename, which never follows a link: what appeared at
	// path while the data was written is refused too, not replaced.
	if err := notOther(path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	// Make the rename itself durable; not every platform can sync a directory, and the
	// file is already whole either way.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Create opens path for reading and writing, empty, as os.Create does, when path is a
// regular file or absent: a symbolic link at path is refused, not followed, and so is a
// named pipe or a device (opened without waiting on it, then judged by what was opened).
func Create(path string) (*os.File, error) {
	if err := notOther(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNofollow|oNonblock, 0o644)
	if err != nil {
		// A link made after the check: O_NOFOLLOW refuses it.
		if st, lerr := os.Lstat(path); lerr == nil && !st.Mode().IsRegular() {
			return nil, &NotRegularError{Path: path, Mode: st.Mode(), Writing: true}
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: st.Mode(), Writing: true}
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// notOther is nil when path is absent or a regular file (never following a link).
func notOther(path string) error { return absentOr(path, false) }

// absentOr is nil when path is absent, or is a directory (dir) or a regular file (not
// dir) itself, never following a link.
func absentOr(path string, dir bool) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if dir && !st.IsDir() || !dir && !st.Mode().IsRegular() {
		return &NotRegularError{Path: path, Mode: st.Mode(), Writing: true, WantDir: dir}
	}
	return nil
}
