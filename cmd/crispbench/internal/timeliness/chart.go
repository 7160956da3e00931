package timeliness

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// writeTiles draws plots, row-major (nil cells stay empty), as one SVG
// of the given size per tile.
func writeTiles(w io.Writer, plots [][]*plot.Plot, tileW, tileH vg.Length) error {
	rows, cols := len(plots), len(plots[0])
	img := vgsvg.New(tileW*vg.Length(cols), tileH*vg.Length(rows))
	drawTiles(draw.New(img), plots)
	_, err := img.WriteTo(w)
	return err
}

// drawTiles draws plots, row-major (nil cells stay empty), aligned on c.
func drawTiles(c draw.Canvas, plots [][]*plot.Plot) {
	rows, cols := len(plots), len(plots[0])
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, t, c)
	for j := range plots {
		for i, p := range plots[j] {
			if p != nil {
				p.Draw(canvases[j][i])
			}
		}
	}
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}

// Chart draws miss ratio and useful work against utilisation: a panel
// per workload shape and cost distribution, a line per variant (the
// mean over traces).
func (r *QualityResult) Chart(w io.Writer) error {
	var plots [][]*plot.Plot
	for _, metric := range []string{"miss ratio", "useful work"} {
		for _, workers := range r.Config.Workers {
			var row []*plot.Plot
			for _, d := range r.Config.Dists {
				title := fmt.Sprintf("%d workers, %s costs", workers, d)
				if workers == 1 {
					title = fmt.Sprintf("one actor, %s costs", d)
				}
				p := newPlot(title, "utilisation", metric)
				p.Y.Min, p.Y.Max = 0, 1
				var args []any
				for _, v := range r.Config.Variants {
					if metric == "miss ratio" && v == EDFCost {
						continue // its deadlines are earlier: not comparable
					}
					pts := make(plotter.XYs, len(r.Config.Utilisations))
					for k, u := range r.Config.Utilisations {
						q := r.point(workers, d.String(), u, v.String())
						pts[k].X, pts[k].Y = u, q.MissRatio.Mean
						if metric == "useful work" {
							pts[k].Y = q.UsefulWork.Mean
						}
					}
					args = append(args, v.String(), pts)
				}
				if err := plotutil.AddLinePoints(p, args...); err != nil {
					return err
				}
				if metric == "useful work" {
					p.Legend.Top = false
				}
				row = append(row, p)
			}
			plots = append(plots, row)
		}
	}
	return writeTiles(w, plots, 9*vg.Centimeter, 8*vg.Centimeter)
}

// cdf returns the empirical distribution of ds in milliseconds, thinned
// to at most 400 points.
func cdf(ds []time.Duration) plotter.XYs {
	s := slices.Clone(ds)
	slices.Sort(s)
	step := max(1, len(s)/400)
	var pts plotter.XYs
	for i := 0; i < len(s); i += step {
		pts = append(pts, plotter.XY{X: float64(s[i]) / 1e6, Y: float64(i+1) / float64(len(s))})
	}
	if n := len(s); n > 0 {
		pts = append(pts, plotter.XY{X: float64(s[n-1]) / 1e6, Y: 1})
	}
	return pts
}

// Chart draws, per utilisation, the distribution of start slack and of
// blocking, a line per policy.
func (r *LatenessResult) Chart(w io.Writer) error {
	var slackRow, blockRow []*plot.Plot
	for _, u := range r.Config.Utilisations {
		ps := newPlot(fmt.Sprintf("start slack, U = %.1f", u), "deadline − start (ms)", "fraction of started messages")
		pb := newPlot(fmt.Sprintf("blocking, U = %.1f", u), "blocking (ms)", "fraction of blocked messages")
		ps.Legend.Top, ps.Legend.Left = false, false
		pb.Legend.Top, pb.Legend.Left = false, false
		var smax, bmax float64
		for _, p := range r.Points {
			if p.Utilisation != u {
				continue
			}
			// Show up to the 99th percentile: the tails are long.
			smax = max(smax, float64(p.Slack.P99)/1e6)
			bmax = max(bmax, float64(p.Blocking.P99)/1e6)
			v := variantNamed(p.Variant)
			for _, x := range []struct {
				pl *plot.Plot
				ds []time.Duration
			}{{ps, p.slack}, {pb, p.blocking}} {
				if len(x.ds) == 0 {
					continue
				}
				l, err := plotter.NewLine(cdf(x.ds))
				if err != nil {
					return err
				}
				l.Color, l.Dashes = plotutil.Color(int(v)), plotutil.Dashes(int(v))
				l.Width = vg.Points(1.5)
				x.pl.Add(l)
				x.pl.Legend.Add(p.Variant, l)
			}
		}
		ps.X.Min, ps.X.Max, pb.X.Min, pb.X.Max = 0, smax, 0, bmax
		slackRow, blockRow = append(slackRow, ps), append(blockRow, pb)
	}
	return writeTiles(w, [][]*plot.Plot{slackRow, blockRow}, 9*vg.Centimeter, 8*vg.Centimeter)
}

// Chart draws the lag's p99 (merged over runs) as grouped bars on a log
// scale: a panel per pending count, a group per cell (actors / load /
// hogs), a bar per mechanism. The cells are categories, not points on a
// scale, so bars rather than lines; the mechanisms are the same in every
// panel, so one legend under the panels rather than one inside each,
// where it sat on the tallest bars.
//
// The bars show log10(p99 / floor) on a linear axis whose ticks are
// labelled in milliseconds: bars start at 0, which plot.LogScale cannot
// place, and plot.LogScale also centres the axis label on the linear
// midpoint, near the top, pushing the data down under a gap.
func (r *LagResult) Chart(w io.Writer) error {
	var row []*plot.Plot
	var legend []legendEntry
	for _, pending := range r.Config.Pending {
		names, series := lagBars(r, pending)
		if len(names) == 0 {
			continue // every cell skipped (busy loads on many actors)
		}
		lowest, highest := math.Inf(1), 0.0
		for _, s := range series {
			for _, v := range s {
				if v > 0 {
					lowest, highest = math.Min(lowest, v), math.Max(highest, v)
				}
			}
		}
		if highest == 0 {
			lowest, highest = 1, 1
		}
		// The axis starts below the lowest bar, at a power of ten.
		floor := math.Ceil(math.Log10(lowest)) - 1
		p := newPlot(fmt.Sprintf("p99 miss notification lag, %s pending", fmtInt(int64(pending))), "actors / load / hogs", "p99 lag (ms, log scale)")
		n := len(r.Config.Mechanisms)
		width := vg.Points(7)
		legend = legend[:0]
		for k, m := range r.Config.Mechanisms {
			heights := make(plotter.Values, len(series[k]))
			for i, v := range series[k] {
				if v > 0 {
					heights[i] = math.Log10(v) - floor
				}
			}
			bars, err := plotter.NewBarChart(heights, width)
			if err != nil {
				return err
			}
			bars.Offset = (vg.Length(k) - vg.Length(n-1)/2) * width
			bars.Color = plotutil.Color(k)
			bars.LineStyle.Width = 0
			p.Add(bars)
			legend = append(legend, legendEntry{m.String(), bars})
		}
		p.Legend = plot.NewLegend()
		p.NominalX(names...)
		p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
		p.X.Tick.Label.Rotation = math.Pi / 4
		// Anchored at their top right, the labels stay under the bars.
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YTop
		p.Y.Min, p.Y.Max = 0, math.Max(1, math.Ceil(math.Log10(highest)-floor))
		p.Y.Tick.Marker = decadeTicks{floor}
		row = append(row, p)
	}
	if len(row) == 0 {
		return errors.New("timeliness: no lag cells to chart")
	}
	return writeTilesLegend(w, [][]*plot.Plot{row}, 11*vg.Centimeter, 10*vg.Centimeter, legend)
}

// lagBars returns, for one pending count, the cells' names and a series
// per mechanism with one p99 in milliseconds per cell, 0 where the
// mechanism was not measured.
func lagBars(r *LagResult, pending int) (names []string, series []plotter.Values) {
	series = make([]plotter.Values, len(r.Config.Mechanisms))
	for _, c := range r.Cells {
		if c.Pending != pending {
			continue
		}
		names = append(names, fmt.Sprintf("%s/%s/%dh", shortInt(c.Actors), c.Load, c.Hogs))
		for k, m := range r.Config.Mechanisms {
			var v float64
			if q, ok := c.Merged[m.String()]; ok && q.Count > 0 {
				v = math.Max(float64(q.P99)/1e6, 0.001)
			}
			series[k] = append(series[k], v)
		}
	}
	return names, series
}

// decadeTicks marks an axis of log10(v) - floor: a labelled tick at
// each power of ten, unlabelled ones at 2..9 times it.
type decadeTicks struct{ floor float64 }

func (d decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for k := math.Floor(lo); k <= hi; k++ {
		ts = append(ts, plot.Tick{Value: k, Label: strconv.FormatFloat(math.Pow(10, k+d.floor), 'g', -1, 64)})
		for j := 2.0; j < 10 && k+math.Log10(j) <= hi; j++ {
			ts = append(ts, plot.Tick{Value: k + math.Log10(j)})
		}
	}
	return ts
}

// A legendEntry is a name and the thumbnail drawn beside it.
type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

// writeTilesLegend is writeTiles with one legend under the tiles, for
// plots that all show the same series: its entries side by side, in as
// many centred rows as the width needs.
func writeTilesLegend(w io.Writer, plots [][]*plot.Plot, tileW, tileH vg.Length, legend []legendEntry) error {
	rows, cols := len(plots), len(plots[0])
	width := tileW * vg.Length(cols)
	gap, rowH := vg.Millimeter*6, vg.Millimeter*7

	// Each entry is a legend of its own; lines holds the entries' indices
	// per row of the strip.
	ls := make([]plot.Legend, len(legend))
	widths := make([]vg.Length, len(legend))
	var lines [][]int
	var used vg.Length
	for i, e := range legend {
		ls[i] = plot.NewLegend()
		ls[i].Left, ls[i].Top = true, true
		ls[i].Add(e.name, e.thumb)
		// A quarter more than the text measures: a viewer without the
		// SVG's font (Liberation) draws a wider one in its place.
		widths[i] = ls[i].ThumbnailWidth + ls[i].TextStyle.Width(" "+e.name)*5/4
		if len(lines) == 0 || used+gap+widths[i] > width {
			lines, used = append(lines, nil), -gap
		}
		lines[len(lines)-1] = append(lines[len(lines)-1], i)
		used += gap + widths[i]
	}
	stripH := rowH*vg.Length(len(lines)) + vg.Millimeter*3

	img := vgsvg.New(width, tileH*vg.Length(rows)+stripH)
	dc := draw.New(img)
	drawTiles(draw.Crop(dc, 0, 0, stripH, 0), plots)
	for j, line := range lines {
		total := -gap
		for _, i := range line {
			total += gap + widths[i]
		}
		x := dc.Min.X + (width-total)/2
		top := dc.Min.Y + stripH - vg.Length(j)*rowH
		for _, i := range line {
			c := dc
			c.Rectangle = vg.Rectangle{Min: vg.Point{X: x, Y: top - rowH}, Max: vg.Point{X: x + widths[i], Y: top}}
			ls[i].Draw(c)
			x += widths[i] + gap
		}
	}
	_, err := img.WriteTo(w)
	return err
}

// shortInt prints 10000 as 10k.
func shortInt(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// Chart draws deadlines-on/off throughput ratios and watchdog CPU.
func (r *OverheadResult) Chart(w io.Writer) error {
	p := newPlot("cost of deadlines: time per message, on / off", "", "ratio")
	vals := make(plotter.Values, len(r.Throughput))
	var names []string
	for i, t := range r.Throughput {
		vals[i] = t.NsOn / t.NsOff
		names = append(names, t.Name)
	}
	bars, err := plotter.NewBarChart(vals, vg.Centimeter)
	if err != nil {
		return err
	}
	p.Add(bars)
	p.NominalX(names...)
	q := newPlot("watchdog CPU time", "deadlines coming due per second", "process CPU (ms per s)")
	var args []any
	for _, pending := range r.Config.Pending {
		for _, prec := range []bool{false, true} {
			var pts plotter.XYs
			for _, wd := range r.Watchdog {
				if wd.Pending == pending && wd.Precision == prec {
					pts = append(pts, plotter.XY{X: float64(wd.Rate), Y: wd.CPU * 1000})
				}
			}
			if len(pts) == 0 {
				continue
			}
			name := fmtInt(int64(pending)) + " pending"
			if prec {
				name += ", precision 1ms"
			}
			args = append(args, name, pts)
		}
	}
	if err := plotutil.AddLinePoints(q, args...); err != nil {
		return err
	}
	return writeTiles(w, [][]*plot.Plot{{p, q}}, 12*vg.Centimeter, 9*vg.Centimeter)
}
