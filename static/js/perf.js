// Performance run charts: specs from json_script#perf-charts (tlsaudit/loadtests/presenters.py).
// Datasets with an `errors` array get ± error bars (SD) drawn by the small plugin below.
const COLORS = ["#1f5fbf", "#b42318", "#0e7a3e", "#b7791f", "#6941c6", "#475467"];

const errorBars = {
  id: "errorBars",
  afterDatasetsDraw(chart) {
    const { ctx, scales } = chart;
    chart.data.datasets.forEach((dataset, i) => {
      if (!dataset.errors || chart.getDatasetMeta(i).hidden) return;
      chart.getDatasetMeta(i).data.forEach((bar, j) => {
        const value = dataset.data[j];
        const sd = dataset.errors[j];
        if (value == null || sd == null) return;
        const top = scales.y.getPixelForValue(value + sd);
        const bottom = scales.y.getPixelForValue(Math.max(0, value - sd));
        ctx.save();
        ctx.strokeStyle = "#101828";
        ctx.lineWidth = 1.2;
        ctx.beginPath();
        ctx.moveTo(bar.x, top); ctx.lineTo(bar.x, bottom);
        ctx.moveTo(bar.x - 5, top); ctx.lineTo(bar.x + 5, top);
        ctx.moveTo(bar.x - 5, bottom); ctx.lineTo(bar.x + 5, bottom);
        ctx.stroke();
        ctx.restore();
      });
    });
  },
};

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
          label: d.label, data: d.data, errors: d.errors, spanGaps: true,
          borderColor: COLORS[i % COLORS.length], backgroundColor: COLORS[i % COLORS.length] + (spec.type === "bar" ? "cc" : "33"),
        })),
      },
      options: {
        animation: false,
        scales: {
          x: { stacked: spec.stacked, title: { display: true, text: spec.x_title } },
          y: { stacked: spec.stacked, beginAtZero: true, title: { display: true, text: spec.y_title } },
        },
        plugins: { tooltip: { callbacks: { afterLabel: (item) => {
          const sd = item.dataset.errors && item.dataset.errors[item.dataIndex];
          return sd == null ? "" : `± ${sd} (SD)`;
        } } } },
      },
      plugins: [errorBars],
    });
  });
}
document.addEventListener("DOMContentLoaded", drawPerfCharts);
document.addEventListener("htmx:afterSwap", drawPerfCharts);
