// Package chart draws a replay's report as an SVG picture, with
// gonum.org/v1/plot: on the left, the satisfaction of every customer
// under each strategy, customers ranked by the number of jobs they
// submitted; on the right, the distribution of the time from a job's
// submission to its first answer (the share of all jobs answered within
// a given time, on a logarithmic time axis), where the jobs never
// answered show as a curve that stops short of 100%.
//
// The same report gives the same bytes: the picture has no date and
// embeds no font.
package chart

import (
	"cmp"
	"errors"
	"image/color"
	"io"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/crisprt/crisp/cmd/crispbench/internal/replay"
)

// colours tells the strategies apart, also to readers who do not tell
// red from green (the Okabe-Ito palette's vermillion and blue).
var colours = map[replay.Strategy]color.Color{
	replay.Polling:  color.RGBA{R: 213, G: 94, A: 255},
	replay.Deadline: color.RGBA{G: 114, B: 178, A: 255},
}

// maxPoints bounds the points of each distribution curve, which keeps
// the file small however many jobs there were.
const maxPoints = 400

// Write draws the report as SVG on w.
func Write(w io.Writer, r *replay.Report) error {
	if len(r.Results) == 0 {
		return errors.New("chart: the report has no results")
	}
	left, err := satisfaction(r)
	if err != nil {
		return err
	}
	right, err := waits(r)
	if err != nil {
		return err
	}
	c := vgsvg.NewWith(vgsvg.UseWH(11*vg.Inch, 4.5*vg.Inch), vgsvg.EmbedFonts(false))
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: 8 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	cs := plot.Align([][]*plot.Plot{{left, right}}, tiles, draw.New(c))
	left.Draw(cs[0][0])
	right.Draw(cs[0][1])
	_, err = c.WriteTo(w)
	return err
}

// satisfaction plots each customer's satisfaction per strategy against
// its rank by volume.
func satisfaction(r *replay.Report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Satisfaction per customer"
	p.X.Label.Text = "customers, by jobs submitted (1 = most)"
	p.Y.Label.Text = "jobs completed / requested (%)"
	p.Y.Min, p.Y.Max = 0, 100
	p.Legend.Top, p.Legend.Left = false, true
	p.Legend.XOffs, p.Legend.YOffs = 2*vg.Millimeter, 2*vg.Millimeter
	p.X.Tick.Marker = rankTicks{}

	first := r.Results[0].Customers
	rank := make([]int, len(first)) // customer indexes, most jobs first
	for i := range rank {
		rank[i] = i
	}
	slices.SortStableFunc(rank, func(a, b int) int { return cmp.Compare(first[b].Requested, first[a].Requested) })

	for _, res := range r.Results {
		xys := make(plotter.XYs, len(rank))
		for k, i := range rank {
			xys[k] = plotter.XY{X: float64(k + 1), Y: 100 * res.Customers[i].Satisfaction()}
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle.Color = colours[res.Strategy]
		s.GlyphStyle.Radius = vg.Points(2.2)
		p.Add(s)
		p.Legend.Add(res.Strategy.String()+": "+percent(res.Total.Satisfaction())+" in all", s)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// waits plots, per strategy, the share of jobs answered within a time
// of their submission.
func waits(r *replay.Report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Time to first answer"
	p.X.Label.Text = "time since submission"
	p.Y.Label.Text = "jobs answered (% of requested)"
	p.Y.Min, p.Y.Max = 0, 100
	p.X.Scale = plot.LogScale{}
	p.Legend.Top, p.Legend.Left = true, true // where the curves are still low
	p.Legend.XOffs, p.Legend.YOffs = 2*vg.Millimeter, -3*vg.Millimeter

	lo, hi := time.Minute, time.Hour
	for _, res := range r.Results {
		ws := res.Total.Waits()
		if len(ws) > 0 {
			lo, hi = min(lo, max(ws[0].Wait, time.Second)), max(hi, ws[len(ws)-1].Wait)
		}
	}
	p.X.Min, p.X.Max = minutes(lo), minutes(hi)
	p.X.Tick.Marker = timeTicks{}

	for _, res := range r.Results {
		ws, n := res.Total.Waits(), res.Total.Requested
		xys := make(plotter.XYs, 0, maxPoints+2)
		xys = append(xys, plotter.XY{X: p.X.Min, Y: 0})
		answered := 0
		for _, w := range ws {
			answered += w.Jobs
		}
		// One point per distinct wait (the share answered by then), at
		// most about maxPoints of them, evenly spread over the jobs.
		step := max(1, answered/maxPoints)
		seen, next := 0, 0
		for _, w := range ws {
			if seen += w.Jobs; seen > next {
				xys = append(xys, plotter.XY{X: minutes(max(w.Wait, time.Second)), Y: 100 * float64(seen) / float64(n)})
				next = seen + step - 1
			}
		}
		if len(ws) > 0 {
			xys = append(xys, plotter.XY{X: p.X.Max, Y: 100 * float64(answered) / float64(n)})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.StepStyle = plotter.PostStep
		l.LineStyle.Color = colours[res.Strategy]
		l.LineStyle.Width = vg.Points(1.5)
		p.Add(l)
		label := res.Strategy.String()
		if res.Total.Never > 0 {
			label += ": " + percent(float64(res.Total.Never)/float64(n)) + " never answered"
		}
		p.Legend.Add(label, l)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

func minutes(d time.Duration) float64 { return d.Minutes() }

func percent(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }

// rankTicks marks customer ranks at round numbers: 1, then every 1, 2,
// 5, 10, 20, 50, ... whichever gives at most ten marks.
type rankTicks struct{}

func (rankTicks) Ticks(lo, hi float64) []plot.Tick {
	step := 1.0
	for k := 0; (hi-lo)/step > 10; k++ {
		step *= []float64{2, 2.5, 2}[k%3]
	}
	ts := []plot.Tick{{Value: 1, Label: "1"}}
	for v := step; v <= hi; v += step {
		if v > 1 && v >= lo {
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		}
	}
	return ts
}

// timeTicks marks a time axis in minutes at round durations.
type timeTicks struct{}

var marks = []struct {
	min   float64
	label string
}{
	{1.0 / 60, "1s"}, {10.0 / 60, "10s"}, {1, "1m"}, {5, "5m"}, {15, "15m"}, {60, "1h"},
	{4 * 60, "4h"}, {12 * 60, "12h"}, {24 * 60, "1d"}, {3 * 24 * 60, "3d"}, {7 * 24 * 60, "1w"}, {30 * 24 * 60, "30d"},
}

func (timeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for _, m := range marks {
		if m.min >= lo && m.min <= hi {
			ts = append(ts, plot.Tick{Value: m.min, Label: m.label})
		}
	}
	return ts
}
