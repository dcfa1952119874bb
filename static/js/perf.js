// Performance run charts: specs from json_script#perf-charts (tlsaudit/loadtests/presenters.py).
// Datasets with an `intervals` array ([low, high] per point, or null) get 95 % interval error bars
// (static/js/intervals.js). Values may be negative (an overhead where HTTPS is faster): the bars
// then go down from zero.
const COLORS = ["#1f5fbf", "#b42318", "#0e7a3e", "#b7791f", "#6941c6", "#475467"];

function drawPerfCharts() {
  const source = document.getElementById("perf-charts");
  if (!source || !window.Chart) return;
  JSON.parse(source.textContent).forEach((spec) => {
    const canvas = document.getElementById(`chart-${spec.id}`);
    if (!canvas || canvas.dataset.drawn) return;
    canvas.dataset.drawn = "1";
    new Chart(canvas, {
      type: spec.type,
      data: {
        labels: spec.labels,
        datasets: spec.datasets.map((d, i) => ({
          label: d.label, data: d.data, intervals: d.intervals, spanGaps: true,
          borderColor: COLORS[i % COLORS.length], backgroundColor: COLORS[i % COLORS.length] + (spec.type === "bar" ? "cc" : "33"),
        })),
      },
      options: {
        animation: false,
        scales: {
          x: { stacked: spec.stacked, title: { display: true, text: spec.x_title } },
          y: { stacked: spec.stacked, beginAtZero: true, ...window.intervalRange(spec), title: { display: true, text: spec.y_title } },
        },
        plugins: { tooltip: { callbacks: { afterLabel: window.intervalLabel } } },
      },
      plugins: [window.intervalBars],
    });
  });
}
document.addEventListener("DOMContentLoaded", drawPerfCharts);
document.addEventListener("htmx:afterSwap", drawPerfCharts);
