package joblog_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

// FuzzWriter writes a job made of arbitrary field values, in both
// formats. The Writer promises to refuse exactly the jobs a Reader would
// not accept back: a job it writes must read back equal (times as
// instants), and a job it refuses must be refused with an error naming
// the field, with nothing of it written.
func FuzzWriter(f *testing.F) {
	f.Add("J1", "C001", "node-1", int64(1359709200), int64(0), 0, int64(270e9), uint8(1), int64(15*time.Minute), int64(2*time.Hour), 1)
	f.Add(`J3 "quoted", with comma`, "Café, Ltd.", "node 3", int64(1359709201), int64(250e6), 7200, int64(1500e6), uint8(3), int64(0), int64(time.Hour), -2)
	f.Add("", "C", "n", int64(0), int64(0), 0, int64(-1), uint8(0), int64(-1), int64(0), 0)
	f.Add("J", "C", "n", int64(-62135596800), int64(0), 0, int64(1<<63-1), uint8(2), int64(1), int64(1), 1<<62)
	f.Fuzz(func(t *testing.T, id, customer, node string, sec, nsec int64, offset int, dur int64, outcome uint8, sd, rt int64, prio int) {
		j := joblog.Job{
			ID: id, Customer: customer, Node: node,
			Submitted: time.Unix(sec, nsec).In(time.FixedZone("", offset)),
			Duration:  time.Duration(dur),
			Outcome:   joblog.Outcome(outcome),
			Agreement: joblog.Agreement{StartDeadline: time.Duration(sd), ResultTimeout: time.Duration(rt), Priority: prio},
		}
		for _, f := range []joblog.Format{joblog.CSV, joblog.JSONL} {
			var buf bytes.Buffer
			w := joblog.NewWriter(&buf, f)
			if err := w.Write(j); err != nil {
				assert.Contains(t, err.Error(), `field "`, "the error names the field")
				require.NoError(t, w.Flush())
				if f == joblog.CSV {
					assert.Equal(t, 1, strings.Count(buf.String(), "\n"), "only the header is written: %q", buf.String())
				} else {
					assert.Empty(t, buf.String())
				}
				continue
			}
			require.NoError(t, w.Flush())
			got, err := readAll(joblog.NewReader(bytes.NewReader(buf.Bytes())))
			require.NoError(t, err, "%v: the Writer wrote what the Reader refuses:\n%q", f, buf.String())
			equalJobs(t, []joblog.Job{j}, got)
		}
	})
}

// TestWriterGapsFoundByFuzzing holds the smallest jobs that the Writer
// once wrote and a Reader then refused or read back different, found by
// FuzzWriter: the Writer now refuses each, naming the field.
func TestWriterGapsFoundByFuzzing(t *testing.T) {
	base := joblog.Job{ID: "J", Customer: "C", Node: "n", Outcome: joblog.Completed,
		Submitted: time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)}
	cases := map[string]func(j *joblog.Job){
		"year 0":                  func(j *joblog.Job) { j.Submitted = time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC) },
		"offset of 30 seconds":    func(j *joblog.Job) { j.Submitted = j.Submitted.In(time.FixedZone("", 30)) },
		"id with a leading space": func(j *joblog.Job) { j.ID = " J" },
		"node of one space":       func(j *joblog.Job) { j.Node = " " },
		"customer with \\r\\n":    func(j *joblog.Job) { j.Customer = "a\r\nb" },
		"customer not UTF-8":      func(j *joblog.Job) { j.Customer = "a\xffb" },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			j := base
			edit(&j)
			for _, f := range []joblog.Format{joblog.CSV, joblog.JSONL} {
				var buf bytes.Buffer
				w := joblog.NewWriter(&buf, f)
				err := w.Write(j)
				require.Error(t, err, "%v: written, though it would not read back", f)
				assert.Contains(t, err.Error(), `field "`, "the error names the field")
			}
		})
	}
}
