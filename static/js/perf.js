// Performance run charts: specs from json_script#perf-charts (tlsaudit/loadtests/presenters.py).
// Datasets with an `intervals` array ([low, high] per point, or null) get 95 % interval error bars,
// drawn by the small plugin below (no CDN: the CSP allows our own static files only). Values may be
// negative (an overhead where HTTPS is faster): the bars then go down from zero.
const COLORS = ["#1f5fbf", "#b42318", "#0e7a3e", "#b7791f", "#6941c6", "#475467"];

const intervalBars = {
  id: "intervalBars",
  afterDatasetsDraw(chart) {
    const { ctx, scales } = chart;
    chart.data.datasets.forEach((dataset, i) => {
      if (!dataset.intervals || chart.getDatasetMeta(i).hidden) return;
      chart.getDatasetMeta(i).data.forEach((point, j) => {
        const bounds = dataset.intervals[j];
        if (!bounds || dataset.data[j] == null) return;
        const top = scales.y.getPixelForValue(bounds[1]);
        const bottom = scales.y.getPixelForValue(bounds[0]);
        ctx.save();
        ctx.strokeStyle = "#101828";
        ctx.lineWidth = 1.2;
        ctx.beginPath();
        ctx.moveTo(point.x, top); ctx.lineTo(point.x, bottom);
        ctx.moveTo(point.x - 5, top); ctx.lineTo(point.x + 5, top);
        ctx.moveTo(point.x - 5, bottom); ctx.lineTo(point.x + 5, bottom);
        ctx.stroke();
        ctx.restore();
      });
    });
  },
};

function intervalLabel(item) {
  const bounds = item.dataset.intervals && item.dataset.intervals[item.dataIndex];
  return bounds ? `95 % interval ${bounds[0]} … ${bounds[1]}` : "";
}

// The value axis must reach the ends of the error bars, not only the points.
function intervalRange(spec) {
  const ends = spec.datasets.flatMap((d) => (d.intervals || []).filter(Boolean).flat());
  return ends.length ? { suggestedMin: Math.min(0, ...ends), suggestedMax: Math.max(0, ...ends) } : {};
}

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
          y: { stacked: spec.stacked, beginAtZero: true, ...intervalRange(spec), title: { display: true, text: spec.y_title } },
        },
        plugins: { tooltip: { callbacks: { afterLabel: intervalLabel } } },
      },
      plugins: [intervalBars],
    });
  });
}
document.addEventListener("DOMContentLoaded", drawPerfCharts);
document.addEventListener("htmx:afterSwap", drawPerfCharts);
