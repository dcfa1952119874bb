// Audit report: the score chart (data from json_script) and the copy buttons.
// On a phone a 2:1 chart is ~170 px tall, most of it legend: draw charts square there (issue 17).
if (window.Chart && window.innerWidth < 600) Chart.defaults.aspectRatio = 1;
function drawScores() {
  const canvas = document.getElementById("scores-chart");
  const data = document.getElementById("scores-data");
  if (!canvas || !data || !window.Chart || canvas.dataset.drawn) return;
  const scores = JSON.parse(data.textContent);
  canvas.dataset.drawn = "1";
  new Chart(canvas, {
    type: "bar",
    data: { labels: scores.labels, datasets: [{ data: scores.values,
      backgroundColor: scores.values.map((v) => (v >= 90 ? "#0e7a3e" : v >= 80 ? "#3d8b37" : v >= 50 ? "#b7791f" : "#b42318")) }] },
    options: { indexAxis: "y", animation: false, plugins: { legend: { display: false } },
               scales: { x: { min: 0, max: 100 } } },
  });
}
document.addEventListener("DOMContentLoaded", drawScores);
document.addEventListener("htmx:afterSwap", drawScores);
document.addEventListener("click", (event) => {
  const id = event.target.dataset && event.target.dataset.copy;
  if (!id) return;
  navigator.clipboard.writeText(document.getElementById(id).textContent).then(() => {
    event.target.textContent = "Copied";
  });
});
