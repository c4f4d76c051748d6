// chalk view: follow runs that are still going. Everything added to the
// page is HTML the server rendered and escaped.
(function () {
  "use strict";
  document.documentElement.setAttribute("data-js", "ready");

  function interval(el) {
    var n = parseInt(el.getAttribute("data-interval"), 10);
    return n > 0 ? n : 1000;
  }

  function atBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
  }

  function followRun(run) {
    var cursor = run.getAttribute("data-cursor");
    var url = run.getAttribute("data-events");
    var every = interval(run);
    function poll() {
      fetch(url + "?c=" + encodeURIComponent(cursor), { cache: "no-store" })
        .then(function (r) {
          if (!r.ok) { throw new Error("status " + r.status); }
          return r.json();
        })
        .then(function (d) {
          var stick = atBottom();
          if (d.html) { document.getElementById("events").insertAdjacentHTML("beforeend", d.html); }
          if (d.header) { document.getElementById("header").innerHTML = d.header; }
          if (typeof d.files === "string") { document.getElementById("files").innerHTML = d.files; }
          cursor = d.cursor;
          if (stick && d.html) { window.scrollTo(0, document.body.scrollHeight); }
          if (d.done) {
            run.setAttribute("data-done", "true");
            return;
          }
          setTimeout(poll, every);
        })
        .catch(function () { setTimeout(poll, every * 3); });
    }
    setTimeout(poll, every);
  }

  function followList(table) {
    var body = document.getElementById("rows");
    var every = interval(table) * 3;
    function poll() {
      fetch(table.getAttribute("data-rows"), { cache: "no-store" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) {
          body.innerHTML = html;
          if (body.querySelector('tr[data-status="running"]')) { setTimeout(poll, every); }
        })
        .catch(function () { setTimeout(poll, every * 3); });
    }
    setTimeout(poll, every);
  }

  var run = document.getElementById("run");
  if (run && run.getAttribute("data-done") !== "true") { followRun(run); }
  var table = document.getElementById("runs");
  if (table && table.getAttribute("data-running") === "true") { followList(table); }
})();
