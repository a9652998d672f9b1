// Package fsafe opens the files slogate reads so that no path can hang it or flood its
// memory, and writes its files so that no path can redirect or destroy what it writes
// (write.go): only a regular file is opened. A named pipe blocks an open until a writer
// comes, a device such as /dev/zero never ends, and a socket or a directory is no record;
// each is refused with an error that names the path and what it is.
//
// The path is checked before it is opened and the open file is checked again: the file is
// opened with O_NONBLOCK, so a pipe swapped in between the two cannot block the open.
package fsafe

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// NotRegularError says that a path names something other than a regular file (or, with
// WantDir, other than a directory).
type NotRegularError struct {
	Path string
	Mode fs.FileMode
	// Writing: the path was to be written (WriteFile, Create, ProbeDir).
	Writing bool
	// WantDir: the path was to be a directory.
	WantDir bool
}

func (e *NotRegularError) Error() string {
	switch {
	case e.WantDir:
		return fmt.Sprintf("%s is %s, not a directory", e.Path, Kind(e.Mode))
	case e.Writing:
		return fmt.Sprintf("%s is %s, not a regular file: slogate writes only regular files, and never through a link at the path it writes; remove it or give another path", e.Path, Kind(e.Mode))
	}
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, Kind(e.Mode))
}

// IsNotRegular reports whether err is, or wraps, a *NotRegularError.
func IsNotRegular(err error) bool {
	var nr *NotRegularError
	return errors.As(err, &nr)
}

// Kind names a file mode's type in words: "a named pipe (FIFO)", "a character device"...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "of mode " + m.String()
}

// Open opens path for reading if it is a regular file (a symbolic link to one is fine).
func Open(path string) (*os.File, error) {
	return open(path, false)
}

// open opens path for reading; dirOK admits a directory too (for fs.FS's Open).
func open(path string, dirOK bool) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !admit(st.Mode(), dirOK) {
		return nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return openChecked(path, dirOK)
}

// openChecked opens path without waiting on a pipe and refuses what it opened unless it
// is a regular file (or a directory, with dirOK).
func openChecked(path string, dirOK bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	// The path may have changed between the stat and the open: judge what was opened.
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !admit(st.Mode(), dirOK) {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return f, nil
}

func admit(m fs.FileMode, dirOK bool) bool {
	return m.IsRegular() || dirOK && m.IsDir()
}

// ReadFile reads the regular file path whole, as os.ReadFile does.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// ReadDir lists the directory path sorted by name, as os.ReadDir does; anything but a
// directory is refused before it is listed (os.ReadDir of a named pipe blocks).
func ReadDir(path string) ([]fs.DirEntry, error) {
	f, err := open(path, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: path, Err: errors.New("not a directory")}
	}
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// TooLargeError says that a file is over the size a reader accepts.
type TooLargeError struct {
	Path  string
	Size  int64 // -1: not known, the file grew while it was read
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s is over the limit of %d bytes (%d MiB)", e.Path, e.Limit, e.Limit>>20)
	}
	return fmt.Sprintf("%s is %d bytes, over the limit of %d bytes (%d MiB)", e.Path, e.Size, e.Limit, e.Limit>>20)
}

// ReadLimited reads the regular file path of at most limit bytes.
func ReadLimited(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > limit {
		return nil, &TooLargeError{Path: path, Size: st.Size(), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Size: -1, Limit: limit}
	}
	return data, nil
}

// DirFS is os.DirFS(dir) whose files are opened as Open opens them: a directory can be
// opened (to be listed), anything else that is not a regular file is refused.
func DirFS(dir string) fs.FS { return dirFS(dir) }

type dirFS string

func (d dirFS) join(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return string(d), nil
	}
	return string(d) + string(os.PathSeparator) + name, nil
}

func (d dirFS) Open(name string) (fs.File, error) {
	p, err := d.join("open", name)
	if err != nil {
		return nil, err
	}
	f, err := open(p, true)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (d dirFS) ReadFile(name string) ([]byte, error) {
	p, err := d.join("read", name)
	if err != nil {
		return nil, err
	}
	return ReadFile(p)
}

func (d dirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := d.join("readdir", name)
	if err != nil {
		return nil, err
	}
	return ReadDir(p)
}

func (d dirFS) Stat(name string) (fs.FileInfo, error) {
	p, err := d.join("stat", name)
	if err != nil {
		return nil, err
	}
	return os.Stat(p)
}
