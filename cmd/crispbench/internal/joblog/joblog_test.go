package joblog_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

const header = "job,customer,submitted,duration,node,outcome,start_deadline,result_timeout,priority\n"

// readAll reads every job, stopping at the first error (io.EOF is not
// one).
func readAll(r *joblog.Reader) ([]joblog.Job, error) {
	var jobs []joblog.Job
	for j, err := range r.All() {
		if err != nil {
			return jobs, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

func read(t *testing.T, log string, opts ...joblog.Option) ([]joblog.Job, error) {
	t.Helper()
	return readAll(joblog.NewReader(strings.NewReader(log), opts...))
}

// lineError requires err to be a *LineError at line and field.
func lineError(t *testing.T, err error, line int, field string) *joblog.LineError {
	t.Helper()
	var le *joblog.LineError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, line, le.Line, "line of %v", err)
	assert.Equal(t, field, le.Field, "field of %v", err)
	return le
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// sample is a set of jobs exercising every field, including text that
// needs quoting and times with an offset.
func sample() []joblog.Job {
	plus2 := time.FixedZone("", 2*3600)
	return []joblog.Job{
		{ID: "J1", Customer: "C001", Submitted: at("2013-02-01T09:00:00Z"), Duration: 4*time.Minute + 30*time.Second,
			Node: "node-1", Outcome: joblog.Completed,
			Agreement: joblog.Agreement{StartDeadline: 15 * time.Minute, ResultTimeout: 2 * time.Hour, Priority: 1}},
		{ID: "J2", Customer: "C002", Submitted: at("2013-02-01T09:00:00Z"), Duration: 0,
			Node: "node-2", Outcome: joblog.Failed},
		{ID: `J3 "quoted", with comma`, Customer: "Café, Ltd.", Submitted: at("2013-02-01T09:00:01.25Z"),
			Duration: 1500 * time.Millisecond, Node: "node 3", Outcome: joblog.Hung,
			Agreement: joblog.Agreement{ResultTimeout: time.Hour}},
		{ID: "J4", Customer: "C001", Submitted: time.Date(2013, 2, 1, 11, 30, 0, 0, plus2), Duration: 26 * time.Hour,
			Node: "node-1", Outcome: joblog.Completed,
			Agreement: joblog.Agreement{StartDeadline: time.Minute, Priority: -2}},
	}
}

func write(t *testing.T, f joblog.Format, jobs []joblog.Job) string {
	t.Helper()
	var buf bytes.Buffer
	w := joblog.NewWriter(&buf, f)
	for _, j := range jobs {
		require.NoError(t, w.Write(j))
	}
	require.NoError(t, w.Flush())
	return buf.String()
}

// equalJobs compares jobs with times as instants.
func equalJobs(t *testing.T, want, got []joblog.Job) {
	t.Helper()
	norm := func(js []joblog.Job) []joblog.Job {
		out := make([]joblog.Job, len(js))
		for i, j := range js {
			j.Submitted = j.Submitted.UTC()
			out[i] = j
		}
		return out
	}
	assert.Equal(t, norm(want), norm(got))
}

func TestRoundTrip(t *testing.T) {
	for _, f := range []joblog.Format{joblog.CSV, joblog.JSONL} {
		t.Run(f.String(), func(t *testing.T) {
			text := write(t, f, sample())
			r := joblog.NewReader(strings.NewReader(text))
			got, err := readAll(r)
			require.NoError(t, err)
			equalJobs(t, sample(), got)
			assert.Equal(t, f, r.Format(), "format recognised from the text")
			assert.Contains(t, text, "2013-02-01T11:30:00+02:00", "the offset is kept")
			assert.Equal(t, text, write(t, f, got), "writing what was read gives the same text")
		})
	}
}

func TestWrittenText(t *testing.T) {
	jobs := sample()[:2]
	t.Run("csv", func(t *testing.T) {
		assert.Equal(t, header+
			"J1,C001,2013-02-01T09:00:00Z,4m30s,node-1,completed,15m0s,2h0m0s,1\n"+
			"J2,C002,2013-02-01T09:00:00Z,0s,node-2,failed,,,\n",
			write(t, joblog.CSV, jobs))
	})
	t.Run("jsonl", func(t *testing.T) {
		assert.Equal(t,
			`{"job":"J1","customer":"C001","submitted":"2013-02-01T09:00:00Z","duration":"4m30s","node":"node-1","outcome":"completed","start_deadline":"15m0s","result_timeout":"2h0m0s","priority":1}`+"\n"+
				`{"job":"J2","customer":"C002","submitted":"2013-02-01T09:00:00Z","duration":"0s","node":"node-2","outcome":"failed"}`+"\n",
			write(t, joblog.JSONL, jobs))
	})
	t.Run("csv with no jobs is the header", func(t *testing.T) {
		assert.Equal(t, header, write(t, joblog.CSV, nil))
	})
}

func TestReaderAccepts(t *testing.T) {
	t.Run("durations in seconds", func(t *testing.T) {
		jobs, err := read(t, header+"J1,C1,2013-02-01T09:00:00Z,270,n1,completed,90,1.5,\n")
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		assert.Equal(t, 270*time.Second, jobs[0].Duration)
		assert.Equal(t, 90*time.Second, jobs[0].Agreement.StartDeadline)
		assert.Equal(t, 1500*time.Millisecond, jobs[0].Agreement.ResultTimeout)
	})
	t.Run("json numbers and nulls", func(t *testing.T) {
		jobs, err := read(t, `{"job":7,"customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":270,"node":"n1","outcome":"hung","start_deadline":null,"priority":2}`)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		assert.Equal(t, "7", jobs[0].ID)
		assert.Equal(t, 270*time.Second, jobs[0].Duration)
		assert.Equal(t, joblog.Agreement{Priority: 2}, jobs[0].Agreement)
	})
	t.Run("columns in any order, without agreements", func(t *testing.T) {
		jobs, err := read(t, "outcome,node,duration,submitted,customer,job\r\ncompleted,n1,4m,2013-02-01T09:00:00Z,C1,J1\r\n")
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		assert.Equal(t, joblog.Job{ID: "J1", Customer: "C1", Submitted: at("2013-02-01T09:00:00Z"),
			Duration: 4 * time.Minute, Node: "n1", Outcome: joblog.Completed}, jobs[0])
	})
	t.Run("byte order mark, spaces and blank lines", func(t *testing.T) {
		jobs, err := read(t, "\ufeff"+header+"\n J1 , C1 ,2013-02-01T09:00:00Z, 4m ,n1,completed,,,\n\n")
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		assert.Equal(t, "J1", jobs[0].ID)
		jobs, err = read(t, "\n\n  "+`{"job":"J1","customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":"4m","node":"n1","outcome":"failed"}`+"\n\n")
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		assert.Equal(t, joblog.Failed, jobs[0].Outcome)
	})
	t.Run("equal submission times", func(t *testing.T) {
		jobs, err := read(t, header+
			"J1,C1,2013-02-01T09:00:00Z,4m,n1,completed,,,\n"+
			"J2,C1,2013-02-01T10:00:00+01:00,4m,n1,completed,,,\n")
		require.NoError(t, err)
		assert.Len(t, jobs, 2)
	})
	t.Run("a format given overrides recognition", func(t *testing.T) {
		_, err := read(t, header+"J1,C1,2013-02-01T09:00:00Z,4m,n1,completed,,,\n", joblog.WithFormat(joblog.JSONL))
		lineError(t, err, 1, "")
	})
}

// A good first job, so that the bad one is on line 3 (CSV) or 2 (JSON).
const (
	goodCSV  = "J1,C1,2013-02-01T09:00:00Z,4m,n1,completed,,,\n"
	goodJSON = `{"job":"J1","customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":"4m","node":"n1","outcome":"completed"}` + "\n"
)

func TestMalformedCSV(t *testing.T) {
	cases := []struct {
		name, row, field, says string
	}{
		{"bad time", "J2,C1,2013-02-30T09:00:00Z,4m,n1,completed,,,", "submitted", "not an RFC 3339 time"},
		{"time without zone", "J2,C1,2013-02-01 09:00:00,4m,n1,completed,,,", "submitted", "not an RFC 3339 time"},
		{"bad duration", "J2,C1,2013-02-01T09:00:00Z,4 minutes,n1,completed,,,", "duration", "not a duration"},
		{"negative duration", "J2,C1,2013-02-01T09:00:00Z,-4m,n1,completed,,,", "duration", "negative"},
		{"negative seconds", "J2,C1,2013-02-01T09:00:00Z,-1.5,n1,completed,,,", "duration", "negative"},
		{"empty duration", "J2,C1,2013-02-01T09:00:00Z,,n1,completed,,,", "duration", "empty"},
		{"unknown outcome", "J2,C1,2013-02-01T09:00:00Z,4m,n1,done,,,", "outcome", `"done" is not one of completed, failed, hung`},
		{"missing column", "J2,C1,2013-02-01T09:00:00Z,4m,n1", "outcome", "missing: the row has 5 fields, the header 9"},
		{"extra column", "J2,C1,2013-02-01T09:00:00Z,4m,n1,completed,,,,x", "column 10", "extra column: the row has 10 fields, the header 9"},
		{"empty id", ",C1,2013-02-01T09:00:00Z,4m,n1,completed,,,", "job", "empty"},
		{"empty customer", "J2, ,2013-02-01T09:00:00Z,4m,n1,completed,,,", "customer", "empty"},
		{"empty node", "J2,C1,2013-02-01T09:00:00Z,4m,,completed,,,", "node", "empty"},
		{"bad start deadline", "J2,C1,2013-02-01T09:00:00Z,4m,n1,completed,soon,,", "start_deadline", "not a duration"},
		{"zero start deadline", "J2,C1,2013-02-01T09:00:00Z,4m,n1,completed,0s,,", "start_deadline", "zero"},
		{"negative result timeout", "J2,C1,2013-02-01T09:00:00Z,4m,n1,completed,,-1h,", "result_timeout", "negative"},
		{"bad priority", "J2,C1,2013-02-01T09:00:00Z,4m,n1,completed,,,high", "priority", "not a whole number"},
		{"infinite seconds", "J2,C1,2013-02-01T09:00:00Z,inf,n1,completed,,,", "duration", "not a duration in seconds"},
		{"out of order", "J2,C1,2013-02-01T08:59:59Z,4m,n1,completed,,,", "submitted", "earlier than 2013-02-01T09:00:00Z on line 2"},
		{"bare quote", `J"2,C1,2013-02-01T09:00:00Z,4m,n1,completed,,,`, "", "malformed CSV"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jobs, err := read(t, header+goodCSV+c.row+"\n"+goodCSV)
			le := lineError(t, err, 3, c.field)
			assert.ErrorContains(t, le, c.says)
			assert.Len(t, jobs, 1, "the good job before the bad line is read")
		})
	}
}

func TestMalformedJSONL(t *testing.T) {
	cases := []struct {
		name, row, field, says string
	}{
		{"bad time", `{"job":"J2","customer":"C1","submitted":"yesterday","duration":"4m","node":"n1","outcome":"completed"}`, "submitted", "not an RFC 3339 time"},
		{"bad duration", `{"job":"J2","customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":"4 min","node":"n1","outcome":"completed"}`, "duration", "not a duration"},
		{"negative duration", `{"job":"J2","customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":-240,"node":"n1","outcome":"completed"}`, "duration", "negative"},
		{"unknown outcome", `{"job":"J2","customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":"4m","node":"n1","outcome":"lost"}`, "outcome", "not one of"},
		{"missing field", `{"job":"J2","customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":"4m","node":"n1"}`, "outcome", "missing"},
		{"null required field", `{"job":"J2","customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":"4m","node":null,"outcome":"hung"}`, "node", "missing"},
		{"extra field", `{"job":"J2","customer":"C1","colour":"red","submitted":"2013-02-01T09:00:00Z","duration":"4m","node":"n1","outcome":"completed"}`, "colour", "unknown field"},
		{"field twice", `{"job":"J2","job":"J3","customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":"4m","node":"n1","outcome":"completed"}`, "job", "given twice"},
		{"empty id", `{"job":"","customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":"4m","node":"n1","outcome":"completed"}`, "job", "empty"},
		{"wrong type", `{"job":"J2","customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":"4m","node":"n1","outcome":"completed","priority":true}`, "priority", "must be a string or a number"},
		{"fractional priority", `{"job":"J2","customer":"C1","submitted":"2013-02-01T09:00:00Z","duration":"4m","node":"n1","outcome":"completed","priority":1.5}`, "priority", "not a whole number"},
		{"out of order", `{"job":"J2","customer":"C1","submitted":"2013-01-31T09:00:00Z","duration":"4m","node":"n1","outcome":"completed"}`, "submitted", "must be sorted"},
		{"broken JSON", `{"job":"J2","customer":`, "", "malformed JSON"},
		{"not an object", `["J2","C1"]`, "", "not a JSON object"},
		{"two objects", goodJSON[:len(goodJSON)-1] + "{}", "", "text after the JSON object"},
		{"too long", `{"job":"` + strings.Repeat("x", 70000) + `"}`, "", "longer than 65536 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jobs, err := read(t, goodJSON+c.row+"\n"+goodJSON)
			le := lineError(t, err, 2, c.field)
			assert.ErrorContains(t, le, c.says)
			assert.Len(t, jobs, 1, "the good job before the bad line is read")
		})
	}
}

func TestBadHeader(t *testing.T) {
	cases := []struct {
		name, header, field, says string
	}{
		{"unknown column", "job,customer,submitted,duration,node,outcome,colour", "colour", "unknown column 7"},
		{"repeated column", "job,customer,submitted,duration,node,outcome,job", "job", "column 7 repeats"},
		{"required column missing", "job,customer,submitted,duration,outcome", "node", "required column missing"},
		{"a job where the header should be", strings.TrimSuffix(goodCSV, "\n"), "J1", "unknown column 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := read(t, c.header+"\n"+goodCSV, joblog.SkipBad())
			le := lineError(t, err, 1, c.field)
			assert.ErrorContains(t, le, c.says)
		})
	}
}

func TestOutOfOrder(t *testing.T) {
	log := header +
		"J1,C1,2013-02-01T09:00:00Z,4m,n1,completed,,,\n" +
		"J2,C1,2013-02-01T10:00:00Z,4m,n1,completed,,,\n" +
		"J3,C1,2013-02-01T09:30:00Z,4m,n1,completed,,,\n" +
		"J4,C1,2013-02-01T11:00:00Z,4m,n1,completed,,,\n"
	t.Run("is rejected, naming the line", func(t *testing.T) {
		jobs, err := read(t, log)
		le := lineError(t, err, 4, "submitted")
		assert.ErrorIs(t, err, joblog.ErrOutOfOrder)
		assert.EqualError(t, le, `line 4, field "submitted": out of order: `+
			"2013-02-01T09:30:00Z is earlier than 2013-02-01T10:00:00Z on line 3; "+
			"the log must be sorted by submission time")
		assert.Len(t, jobs, 2)
	})
	t.Run("is skipped with SkipBad", func(t *testing.T) {
		r := joblog.NewReader(strings.NewReader(log), joblog.SkipBad())
		jobs, err := readAll(r)
		require.NoError(t, err)
		require.Len(t, jobs, 3)
		assert.Equal(t, "J4", jobs[2].ID)
		n, first := r.Skipped()
		assert.Equal(t, 1, n)
		require.Len(t, first, 1)
		assert.ErrorIs(t, first[0], joblog.ErrOutOfOrder)
	})
}

func TestSkipBad(t *testing.T) {
	var log strings.Builder
	log.WriteString(header)
	bad := 0
	for i := range 30 {
		switch i % 3 {
		case 0:
			log.WriteString("J,C1,2013-02-01T09:00:00Z,4m,n1,completed,,,\n")
		case 1:
			log.WriteString("J,C1,2013-02-01T09:00:00Z,forever,n1,completed,,,\n")
			bad++
		case 2:
			log.WriteString("J,C1,2013-02-01T09:00:00Z,4m,n1\n")
			bad++
		}
	}
	r := joblog.NewReader(strings.NewReader(log.String()), joblog.SkipBad())
	jobs, err := readAll(r)
	require.NoError(t, err)
	assert.Len(t, jobs, 10)
	n, first := r.Skipped()
	assert.Equal(t, bad, n)
	require.Len(t, first, 10, "only the first ten errors are kept")
	lineError(t, first[0], 3, "duration")
	lineError(t, first[1], 4, "outcome")
	lineError(t, first[9], 16, "outcome")

	t.Run("and goes on after malformed JSON and CSV", func(t *testing.T) {
		r := joblog.NewReader(strings.NewReader(goodJSON+"{oops\n"+`{"job":"`+strings.Repeat("x", 70000)+"\n"+goodJSON), joblog.SkipBad())
		jobs, err := readAll(r)
		require.NoError(t, err)
		assert.Len(t, jobs, 2)
		n, _ := r.Skipped()
		assert.Equal(t, 2, n)

		r = joblog.NewReader(strings.NewReader(header+goodCSV+`J"2,C1`+"\n"+goodCSV), joblog.SkipBad())
		jobs, err = readAll(r)
		require.NoError(t, err)
		assert.Len(t, jobs, 2)
	})
}

func TestEmpty(t *testing.T) {
	cases := []struct{ name, log string }{
		{"no input", ""},
		{"white space", " \n\t\n"},
		{"byte order mark", "\ufeff"},
		{"csv header alone", header},
		{"blank lines", "\n\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := read(t, c.log)
			assert.ErrorIs(t, err, joblog.ErrEmpty)
		})
	}
	t.Run("json lines given, blank", func(t *testing.T) {
		_, err := read(t, "\n  \n", joblog.WithFormat(joblog.JSONL))
		assert.ErrorIs(t, err, joblog.ErrEmpty)
	})
	t.Run("every row bad", func(t *testing.T) {
		_, err := read(t, header+"J1,C1,then,4m,n1,completed,,,\nJ2,C1,now,4m,n1,completed,,,\n", joblog.SkipBad())
		assert.ErrorIs(t, err, joblog.ErrEmpty)
		assert.ErrorContains(t, err, "2 bad rows skipped")
	})
}

func TestNextAfterTheEnd(t *testing.T) {
	r := joblog.NewReader(strings.NewReader(header + goodCSV))
	_, err := r.Next()
	require.NoError(t, err)
	for range 2 {
		_, err = r.Next()
		assert.Equal(t, io.EOF, err)
	}
	r = joblog.NewReader(strings.NewReader(header + "J1,C1,then,4m,n1,completed,,,\n" + goodCSV))
	_, err1 := r.Next()
	_, err2 := r.Next()
	assert.Error(t, err1)
	assert.Same(t, err1, err2, "an error sticks")
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestInputErrorStopsEvenWhenSkipping(t *testing.T) {
	broken := errors.New("disk on fire")
	r := joblog.NewReader(io.MultiReader(strings.NewReader(header+goodCSV), failingReader{broken}), joblog.SkipBad())
	jobs, err := readAll(r)
	assert.ErrorIs(t, err, broken)
	assert.Len(t, jobs, 1)
}

func TestWriterRefusesWhatCannotBeReadBack(t *testing.T) {
	good := sample()[0]
	cases := []struct {
		name  string
		edit  func(*joblog.Job)
		field string
	}{
		{"empty id", func(j *joblog.Job) { j.ID = "" }, "job"},
		{"empty customer", func(j *joblog.Job) { j.Customer = "" }, "customer"},
		{"empty node", func(j *joblog.Job) { j.Node = "" }, "node"},
		{"a time before year 0001", func(j *joblog.Job) { j.Submitted = time.Time{}.Add(-time.Second) }, "submitted"},
		{"negative duration", func(j *joblog.Job) { j.Duration = -time.Second }, "duration"},
		{"no outcome", func(j *joblog.Job) { j.Outcome = 0 }, "outcome"},
		{"negative start deadline", func(j *joblog.Job) { j.Agreement.StartDeadline = -time.Second }, "start_deadline"},
		{"negative result timeout", func(j *joblog.Job) { j.Agreement.ResultTimeout = -time.Second }, "result_timeout"},
	}
	for _, f := range []joblog.Format{joblog.CSV, joblog.JSONL} {
		for _, c := range cases {
			t.Run(f.String()+" "+c.name, func(t *testing.T) {
				var buf bytes.Buffer
				w := joblog.NewWriter(&buf, f)
				j := good
				c.edit(&j)
				err := w.Write(j)
				assert.ErrorContains(t, err, `field "`+c.field+`"`)
				require.NoError(t, w.Flush())
				if f == joblog.JSONL {
					assert.Empty(t, buf.String())
				} else {
					assert.Equal(t, header, buf.String())
				}
			})
		}
	}
}

func TestWriterReportsWriteErrors(t *testing.T) {
	broken := errors.New("disk full")
	for _, f := range []joblog.Format{joblog.CSV, joblog.JSONL} {
		w := joblog.NewWriter(failingWriter{broken}, f)
		require.NoError(t, w.Write(sample()[0]), "buffered")
		assert.ErrorIs(t, w.Flush(), broken)
		assert.ErrorIs(t, w.Write(sample()[1]), broken, "the error sticks")
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

func TestOutcomeAndFormatNames(t *testing.T) {
	assert.Equal(t, "completed", joblog.Completed.String())
	assert.Equal(t, "failed", joblog.Failed.String())
	assert.Equal(t, "hung", joblog.Hung.String())
	assert.Equal(t, "Outcome(9)", joblog.Outcome(9).String())
	assert.Equal(t, "csv", joblog.CSV.String())
	assert.Equal(t, "jsonl", joblog.JSONL.String())
	assert.Equal(t, "Format(0)", joblog.Format(0).String())
	var buf bytes.Buffer
	assert.Error(t, joblog.NewWriter(&buf, 0).Write(sample()[0]))
	_, err := read(t, goodCSV, joblog.WithFormat(7))
	assert.ErrorContains(t, err, "unknown format")
}

// The format takes times from the years 0001 to 9999, both ends
// included: 0001-01-01T00:00:00Z is Go's zero time, but a time as good
// as any other in a log.
func TestFirstAndLastYearsReadAndWriteBack(t *testing.T) {
	for _, f := range []joblog.Format{joblog.CSV, joblog.JSONL} {
		t.Run(f.String(), func(t *testing.T) {
			var buf bytes.Buffer
			w := joblog.NewWriter(&buf, f)
			first := joblog.Job{ID: "J1", Customer: "C1", Submitted: at("0001-01-01T00:00:00Z"), Duration: time.Minute, Node: "n1", Outcome: joblog.Completed}
			last := first
			last.ID, last.Submitted = "J2", at("9999-12-31T23:59:59Z")
			require.NoError(t, w.Write(first))
			require.NoError(t, w.Write(last))
			require.NoError(t, w.Flush())
			assert.Contains(t, buf.String(), "0001-01-01T00:00:00Z")

			jobs, err := read(t, buf.String())
			require.NoError(t, err)
			require.Len(t, jobs, 2)
			assert.True(t, jobs[0].Submitted.Equal(first.Submitted))
			assert.True(t, jobs[1].Submitted.Equal(last.Submitted))
		})
	}
}
