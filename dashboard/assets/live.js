// fencegate dashboard: swap in the live part of the page as the server
// sends it (server-sent events on /ui/events), or poll /ui/live every 3 s
// when events are not available. Nothing else: the page works without it.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live) { return; }
  var polling = false;
  function apply(html) { live.innerHTML = html; live.setAttribute("data-updated", String(Date.now())); }
  function poll() {
    if (polling) { return; }
    polling = true;
    var tick = function () {
      fetch("live" + location.search, { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(apply)
        .catch(function () {})
        .then(function () { setTimeout(tick, 3000); });
    };
    setTimeout(tick, 3000);
  }
  if (!window.EventSource) { poll(); return; }
  var es = new EventSource("events" + location.search);
  es.addEventListener("live", function (e) { apply(e.data); });
  es.onerror = function () {
    if (es.readyState === EventSource.CLOSED) { poll(); }
  };
})();
