package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	rpt "github.com/crisprt/crisp/bench/internal/report"
)

// The report's types are the bench command's (internal/report).
type (
	report = rpt.Report
	row    = rpt.Row
	cell   = rpt.Cell
)

// set is the reports of one measurement, merged: the first file's
// settings, the earliest start, and every file's rows in order.
type set struct {
	path string
	report
}

// load reads path, a report file or a directory of them.
func load(path string) (*set, error) {
	files := []string{path}
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if fi.IsDir() {
		files, err = filepath.Glob(filepath.Join(path, "*.json"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no .json files", path)
		}
		slices.Sort(files)
	}
	s := &set{path: path}
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r report
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if r.Suite == "" || r.Reps == 0 {
			return nil, fmt.Errorf("%s: not a bench -json report (no suite or reps)", f)
		}
		if i == 0 {
			s.report = r
			continue
		}
		if err := s.merge(&r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return s, nil
}

// merge adds r's rows to s, if r was measured the same way.
func (s *set) merge(r *report) error {
	var diffs []error
	same := func(what string, have, got any) {
		if have != got {
			diffs = append(diffs, fmt.Errorf("%s %v, but %s has %v", what, got, s.path, have))
		}
	}
	same("suite", s.Suite, r.Suite)
	same("reps", s.Reps, r.Reps)
	same("hogs", s.Hogs, r.Hogs)
	same("cpus", s.CPUs, r.CPUs)
	same("go version", s.GoVersion, r.GoVersion)
	same("os/arch", s.OSArch, r.OSArch)
	for _, nr := range r.Rows {
		if s.row(nr.Workload) != nil {
			diffs = append(diffs, fmt.Errorf("workload %s twice", nr.Workload))
		}
	}
	if err := errors.Join(diffs...); err != nil {
		return err
	}
	if r.Started.Before(s.Started) {
		s.Started = r.Started
	}
	s.Rows = append(s.Rows, r.Rows...)
	return nil
}

func (s *set) row(workload string) *row {
	for _, r := range s.Rows {
		if r.Workload == workload {
			return r
		}
	}
	return nil
}

// systems returns the systems that have a cell in some row, in the
// runner's order: each row lists its cells in that order, so a system
// first seen in a later row (crisp-tell, in the bank's) goes right after
// the system before it there.
func (s *set) systems() []string {
	var out []string
	for _, r := range s.Rows {
		at := 0 // where the next new system of this row goes
		for _, c := range r.Cells {
			if i := slices.Index(out, c.System); i >= 0 {
				at = i + 1
				continue
			}
			out = slices.Insert(out, at, c.System)
			at++
		}
	}
	return out
}
