// lockbench report: sortable verdict tables and the "failing only"
// filter. No network, no library; the page reads fine without it.
(function () {
  "use strict";
  var box = document.getElementById("failing-only");
  if (box) {
    box.addEventListener("change", function () {
      document.body.classList.toggle("failing-only", box.checked);
    });
  }
  function key(cell, numeric) {
    var v = cell ? cell.getAttribute("data-v") || cell.textContent : "";
    if (numeric) {
      var n = parseFloat(v);
      return isNaN(n) ? -Infinity : n;
    }
    return v.toLowerCase();
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    var heads = table.querySelectorAll("thead th");
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var numeric = th.getAttribute("data-sort") === "num";
        var asc = !th.classList.contains("sorted-asc");
        Array.prototype.forEach.call(heads, function (h) {
          h.classList.remove("sorted-asc", "sorted-desc");
        });
        th.classList.add(asc ? "sorted-asc" : "sorted-desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[col], numeric), y = key(b.cells[col], numeric);
          var c = x < y ? -1 : x > y ? 1 : 0;
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();

// A link to a matrix cell's folded charts opens them.
(function () {
  function open() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (el && el.tagName === "DETAILS") {
      el.open = true;
      el.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", open);
  open();
})();
