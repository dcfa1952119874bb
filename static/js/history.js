// Grade history: score over time from json_script#history-chart (tlsaudit/monitoring/history.py),
// grade letters as point labels, scheduled audits as circles and manual ones as triangles.
// On a phone a 2:1 chart is ~170 px tall, most of it legend: draw charts square there (issue 17).
if (window.Chart && window.innerWidth < 600) Chart.defaults.aspectRatio = 1;
function drawHistory() {
  const canvas = document.getElementById("history-canvas");
  const source = document.getElementById("history-chart");
  if (!canvas || !source || canvas.dataset.drawn || typeof Chart === "undefined") return;
  canvas.dataset.drawn = "1";
  const points = JSON.parse(source.textContent).points;
  const gradeLabels = {
    id: "gradeLabels",
    afterDatasetsDraw(chart) {
      const { ctx } = chart;
      ctx.save();
      ctx.font = "bold 12px system-ui, sans-serif";
      ctx.textAlign = "center";
      chart.getDatasetMeta(0).data.forEach((el, i) => ctx.fillText(points[i].grade, el.x, el.y - 10));
      ctx.restore();
    },
  };
  new Chart(canvas, {
    type: "line",
    data: {
      labels: points.map((p) => p.x.slice(0, 16).replace("T", " ")),
      datasets: [{
        label: "Score", data: points.map((p) => p.y), borderColor: "#1f5fbf", tension: 0.2,
        pointStyle: points.map((p) => (p.trigger === "schedule" ? "circle" : "triangle")), pointRadius: 5,
      }],
    },
    options: {
      animation: false,
      scales: { y: { min: 0, max: 110, title: { display: true, text: "score" } } },
      plugins: { tooltip: { callbacks: { label: (item) => `${points[item.dataIndex].grade} · ${item.raw} (${points[item.dataIndex].trigger})` } } },
      onClick: (_, elements) => {
        const i = elements.length ? elements[0].index : 0;
        if (i > 0) window.location.search = `?a=${points[i - 1].id}&b=${points[i].id}`;  // this audit vs the one before
      },
    },
    plugins: [gradeLabels],
  });
}
document.addEventListener("DOMContentLoaded", drawHistory);
