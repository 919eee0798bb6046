// Hover (or tap) a chart to read that day's values; without JavaScript the browser's own
// tooltip shows the same text from each column's <title>.
"use strict";
(function () {
  var tip = document.getElementById("tip");
  if (!tip) return;
  function show(ev) {
    var hit = ev.target.closest && ev.target.closest("rect.hit");
    if (!hit) return;
    tip.textContent = hit.getAttribute("data-tip");
    tip.hidden = false;
    var x = Math.min(ev.clientX + 12, window.innerWidth - tip.offsetWidth - 8);
    tip.style.left = Math.max(8, x) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
    document.querySelectorAll("rect.hit.on").forEach(function (r) { r.classList.remove("on"); });
    hit.classList.add("on");
  }
  document.querySelectorAll("svg.hchart").forEach(function (svg) {
    svg.addEventListener("mousemove", show);
    svg.addEventListener("click", show);
    svg.addEventListener("mouseleave", function () { tip.hidden = true; });
  });
})();
