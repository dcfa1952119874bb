// Draws the PDF report's charts (specs from json_script#report-charts), then tells the printer:
// window.__reportReady = true once every canvas has its Chart and nothing animates.
(function () {
  const COLORS = ["#1f5fbf", "#b42318", "#0e7a3e", "#b7791f", "#6941c6", "#475467", "#0891b2", "#be185d"];
  const scoreColor = (v) => (v >= 90 ? "#0e7a3e" : v >= 80 ? "#3d8b37" : v >= 50 ? "#b7791f" : "#b42318");

  // 95 % intervals ([low, high] per point, see tlsaudit/loadtests/presenters.py) as error bars.
  const intervalBars = {
    id: "intervalBars",
    afterDatasetsDraw(chart) {
      const { ctx, scales } = chart;
      chart.data.datasets.forEach((dataset, i) => {
        if (!dataset.intervals) return;
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
          ctx.moveTo(point.x - 4, top); ctx.lineTo(point.x + 4, top);
          ctx.moveTo(point.x - 4, bottom); ctx.lineTo(point.x + 4, bottom);
          ctx.stroke();
          ctx.restore();
        });
      });
    },
  };

  function intervalRange(spec) {
    const ends = spec.datasets.flatMap((d) => (d.intervals || []).filter(Boolean).flat());
    return ends.length ? { suggestedMin: Math.min(0, ...ends), suggestedMax: Math.max(0, ...ends) } : {};
  }

  function draw(spec) {
    const canvas = document.getElementById(`chart-${spec.id}`);
    if (!canvas) return null;
    const single = spec.datasets.length === 1;
    const scale = (title, extra) => ({ title: { display: !!title, text: title }, ...extra });
    const valueAxis = { beginAtZero: true, min: spec.min, max: spec.max, stacked: spec.stacked, ...intervalRange(spec) };
    return new Chart(canvas, {
      type: spec.type,
      data: {
        labels: spec.labels,
        datasets: spec.datasets.map((d, i) => ({
          label: d.label, data: d.data, intervals: d.intervals, spanGaps: true, tension: 0.2,
          borderColor: COLORS[i % COLORS.length],
          backgroundColor: spec.id === "scores" ? d.data.map(scoreColor) : COLORS[i % COLORS.length] + (spec.type === "bar" ? "cc" : "33"),
        })),
      },
      options: {
        animation: false, responsive: false, devicePixelRatio: 2, indexAxis: spec.horizontal ? "y" : "x",
        plugins: { legend: { display: !single }, tooltip: { enabled: false } },
        scales: spec.horizontal
          ? { x: scale(spec.y_title, valueAxis), y: scale(spec.x_title, {}) }
          : { x: scale(spec.x_title, { stacked: spec.stacked }), y: scale(spec.y_title, valueAxis) },
      },
      plugins: spec.horizontal ? [] : [intervalBars],
    });
  }

  function drawAll() {
    const source = document.getElementById("report-charts");
    const specs = source ? JSON.parse(source.textContent) : [];
    const charts = specs.map(draw);
    const canvases = document.querySelectorAll("canvas[id^='chart-']");
    const drawn = [...canvases].every((c) => window.Chart && Chart.getChart(c));
    window.__reportCharts = charts.filter(Boolean).length;
    window.__reportReady = drawn;
    if (!drawn) window.__reportError = "a chart could not be drawn";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", drawAll);
  else drawAll();
})();
