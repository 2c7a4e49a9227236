// Applies the saved colour theme before the page is drawn, so that a dark
// console does not flash white. "auto" follows the system.
(function () {
  var t = "auto";
  try { t = localStorage.getItem("fifoq.theme") || "auto"; } catch (e) {}
  if (t === "light" || t === "dark") document.documentElement.setAttribute("data-theme", t);
})();
