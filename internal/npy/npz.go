package npy

import (
	"archive/zip"
	"fmt"
	"io"
)

// NPZWriter writes an uncompressed .npz archive: a zip file with one
// NAME.npy member per array, which numpy.load opens as a mapping.
type NPZWriter struct {
	z     *zip.Writer
	names map[string]bool
}

// NewNPZWriter returns a writer of an .npz archive onto w. Close it to
// write the zip directory; w itself is not closed.
func NewNPZWriter(w io.Writer) *NPZWriter {
	return &NPZWriter{z: zip.NewWriter(w), names: map[string]bool{}}
}

// Create starts the member for the array called name (no ".npy" suffix)
// and returns where its .npy encoding goes; it is valid until the next
// Create or Close. Members are stored, not deflated: the arrays are
// integers that compress poorly, and storing keeps writing fast.
func (n *NPZWriter) Create(name string) (io.Writer, error) {
	if name == "" || n.names[name] {
		return nil, fmt.Errorf("npz: array name %q empty or already used", name)
	}
	n.names[name] = true
	return n.z.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Store})
}

// Close finishes the archive.
func (n *NPZWriter) Close() error { return n.z.Close() }

// AddArray writes a as the 1-D array called name.
func AddArray[T Elem](n *NPZWriter, name string, a []T) error {
	w, err := n.Create(name)
	if err != nil {
		return err
	}
	if err := WriteArray(w, a); err != nil {
		return fmt.Errorf("npz: %s: %w", name, err)
	}
	return nil
}

// AddScalar writes v as the 0-d array called name.
func AddScalar[T Elem](n *NPZWriter, name string, v T) error {
	w, err := n.Create(name)
	if err != nil {
		return err
	}
	if err := WriteScalar(w, v); err != nil {
		return fmt.Errorf("npz: %s: %w", name, err)
	}
	return nil
}
