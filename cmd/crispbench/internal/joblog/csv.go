package joblog

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// csvDecoder reads CSV rows through the column order its header gave.
type csvDecoder struct {
	r    *csv.Reader
	cols []field // cols[i] is the field of the i-th column
}

func newCSVDecoder(in io.Reader) (*csvDecoder, error) {
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1 // counted here, to name the missing or extra column
	r.ReuseRecord = true
	header, err := r.Read()
	if err == io.EOF {
		return nil, ErrEmpty
	}
	if err != nil {
		return nil, csvError(err)
	}
	d := &csvDecoder{r: r}
	seen := [nFields]bool{}
	for i, name := range header {
		name = strings.TrimSpace(name)
		f, ok := lookupField(name)
		if !ok {
			return nil, &LineError{Line: 1, Field: name, Err: fmt.Errorf(
				"unknown column %d in the header; the columns are %s", i+1, strings.Join(fieldNames[:], ", "))}
		}
		if seen[f] {
			return nil, &LineError{Line: 1, Field: name, Err: fmt.Errorf("column %d repeats an earlier column", i+1)}
		}
		seen[f] = true
		d.cols = append(d.cols, f)
	}
	for f := range nRequired {
		if !seen[f] {
			return nil, &LineError{Line: 1, Field: f.String(), Err: errors.New("required column missing from the header")}
		}
	}
	return d, nil
}

func (d *csvDecoder) next(rec *record) (int, error) {
	row, err := d.r.Read()
	if err != nil {
		if err == io.EOF {
			return 0, err
		}
		return 0, csvError(err)
	}
	line, _ := d.r.FieldPos(0)
	if len(row) > len(d.cols) {
		return line, &LineError{Line: line, Field: fmt.Sprintf("column %d", len(d.cols)+1), Err: fmt.Errorf(
			"extra column: the row has %d fields, the header %d", len(row), len(d.cols))}
	}
	if len(row) < len(d.cols) {
		return line, &LineError{Line: line, Field: d.cols[len(row)].String(), Err: fmt.Errorf(
			"missing: the row has %d fields, the header %d", len(row), len(d.cols))}
	}
	for i, f := range d.cols {
		// encoding/csv makes one new string per row and slices the
		// fields from it (ReuseRecord reuses only the slice), so the
		// texts stay valid after the next Read.
		rec.text[f], rec.set[f] = strings.TrimSpace(row[i]), true
	}
	return line, nil
}

// csvError turns encoding/csv's syntax errors into LineErrors, which a
// Reader may skip; it reads on from the next line after one.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &LineError{Line: pe.Line, Err: fmt.Errorf("malformed CSV: %v", pe.Err)}
	}
	return err
}
