package observe

import (
	"encoding/json"
	"html/template"
	"net/http"
	"time"
)

// Handler serves a live page of s's figures, in the manner of
// net/http/pprof and x/net/trace's /debug/requests: an HTML table of the
// actors (queued, running, suspended, outcomes, queue wait, p99
// detection lag, last miss) that refreshes itself every second, and the
// same figures as JSON (a Snapshot) when the request asks for
// ?format=json. Mount it where you like:
//
//	http.Handle("/debug/crisp", observe.Handler(stats))
//
// It needs nothing but the standard library and reads s without
// stopping anything; serve it only to those who may see actor and
// message names.
func Handler(s *Stats) http.Handler { return &page{s: s} }

type page struct{ s *Stats }

func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	snap := p.s.Snapshot()
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		_ = enc.Encode(snap) // a write error means the client left
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = pageTemplate.Execute(w, snap)
}

// ms shows a duration in milliseconds, as the page's script does.
func ms(d time.Duration) string {
	return d.Round(time.Microsecond).String()
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"ms": ms}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>crisp actors</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse}th,td{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
tr.missing td{background:#fff1f0}tfoot td{font-weight:bold}
.note{color:#666;font-size:.9em}
</style></head>
<body>
<h1>crisp actors</h1>
<p class="note">Refreshes every second. <a href="?format=json">JSON</a>. Wait: send to start; lag: deadline to the miss's detection; quantiles within 12.5%.</p>
<table id="actors">
<thead><tr><th>actor</th><th>queued</th><th>running</th><th>suspended</th><th>finished</th><th>missed</th><th>panicked</th><th>refused</th><th>stopped</th><th>p50 wait</th><th>p99 wait</th><th>p99 lag</th><th>last miss</th></tr></thead>
<tbody>
{{range .Actors}}<tr{{if .Missed}} class="missing"{{end}}><td>{{.Name}}</td><td>{{.Queued}}</td><td>{{.Running}}</td><td>{{.Suspended}}</td><td>{{.Finished}}</td><td>{{.Missed}}</td><td>{{.Panicked}}</td><td>{{.Refused}}</td><td>{{.Stopped}}</td><td>{{ms .Wait.P50}}</td><td>{{ms .Wait.P99}}</td><td>{{ms .Lag.P99}}</td><td>{{with .LastMiss}}{{.Message}} at {{.Detected.Format "15:04:05.000"}}{{end}}</td></tr>
{{end}}</tbody>
<tfoot>{{with .Total}}<tr><td>all</td><td>{{.Queued}}</td><td>{{.Running}}</td><td>{{.Suspended}}</td><td>{{.Finished}}</td><td>{{.Missed}}</td><td>{{.Panicked}}</td><td>{{.Refused}}</td><td>{{.Stopped}}</td><td>{{ms .Wait.P50}}</td><td>{{ms .Wait.P99}}</td><td>{{ms .Lag.P99}}</td><td></td></tr>{{end}}</tfoot>
</table>
<script>
"use strict";
function dur(ns){
  if(ns<1e3)return ns+"ns";
  if(ns<1e6)return (ns/1e3).toFixed(1)+"µs";
  if(ns<1e9)return (ns/1e6).toFixed(2)+"ms";
  return (ns/1e9).toFixed(2)+"s";
}
function row(a,name){
  const tr=document.createElement("tr");
  if(a.missed>0&&name===undefined)tr.className="missing";
  const miss=a.last_miss&&name===undefined?a.last_miss.message+" at "+new Date(a.last_miss.detected).toISOString().slice(11,23):"";
  for(const v of [name===undefined?a.name:name,a.queued,a.running,a.suspended,a.finished,a.missed,a.panicked,a.refused,a.stopped,dur(a.wait.p50_ns),dur(a.wait.p99_ns),dur(a.lag.p99_ns),miss]){
    const td=document.createElement("td");td.textContent=String(v);tr.appendChild(td);
  }
  return tr;
}
async function refresh(){
  try{
    const r=await fetch("?format=json",{cache:"no-store"});
    const s=await r.json();
    const t=document.getElementById("actors");
    t.tBodies[0].replaceChildren(...(s.actors||[]).map(a=>row(a)));
    t.tFoot.replaceChildren(row(s.total,"all"));
  }catch(e){}
}
setInterval(refresh,1000);
</script>
</body></html>
`))
