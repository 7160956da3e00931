package timeliness

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Table is one markdown table of a section's results.
type Table struct {
	Title  string     `json:"title"`
	Note   string     `json:"note,omitempty"` // a sentence printed under the title
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
}

// Markdown writes t as a titled GitHub-flavoured markdown table.
func (t Table) Markdown(w io.Writer) error {
	var b strings.Builder
	if t.Title != "" {
		fmt.Fprintf(&b, "### %s\n\n", t.Title)
	}
	if t.Note != "" {
		fmt.Fprintf(&b, "%s\n\n", t.Note)
	}
	b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat("---|", len(t.Header)) + "\n")
	for _, r := range t.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtDur prints a duration in the unit that suits it, with three
// significant digits: "740ns", "12.3µs", "1.52ms", "2.10s".
func fmtDur(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d == 0:
		s = "0"
	case d < time.Microsecond:
		s = fmt.Sprintf("%dns", int64(d))
	case d < time.Millisecond:
		s = sig3(float64(d)/1e3) + "µs"
	case d < time.Second:
		s = sig3(float64(d)/1e6) + "ms"
	default:
		s = sig3(float64(d)/1e9) + "s"
	}
	if neg {
		return "-" + s
	}
	return s
}

// sig3 prints x (at least 1) with three significant digits.
func sig3(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

// fmtInt prints n with thousands separators: 100,000.
func fmtInt(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + fmtInt(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Machine describes where and when a run took place.
type Machine struct {
	Date       string `json:"date"`
	CPU        string `json:"cpu"`
	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	// Load is the system's load averages (1, 5, 15 minutes) as
	// /proc/loadavg gives them: other processes share the processors.
	Load string `json:"load"`
}

// ThisMachine reads the machine's description now.
func ThisMachine() Machine {
	m := Machine{
		Date:       time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		CPU:        "unknown",
		GoVersion:  runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Load:       "unknown",
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.Load = strings.Join(f[:3], " ")
		}
	}
	return m
}

// Markdown writes m as a short list.
func (m Machine) Markdown(w io.Writer) error {
	_, err := fmt.Fprintf(w, "- date: %s\n- CPU: %s, GOMAXPROCS %d\n- Go: %s\n- load average (1, 5, 15 min): %s\n\n",
		m.Date, m.CPU, m.GOMAXPROCS, m.GoVersion, m.Load)
	return err
}

// unmarshalName sets *x to the value among all whose name is b.
func unmarshalName[T fmt.Stringer](x *T, b []byte, all []T) error {
	for _, v := range all {
		if v.String() == string(b) {
			*x = v
			return nil
		}
	}
	return fmt.Errorf("timeliness: unknown name %q", b)
}
