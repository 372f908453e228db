// The dashboard's refresh: while the page is open and visible, fetch it again every
// data-refresh-seconds and swap its charts in. Without JavaScript the page reads the same,
// as of its loading.
(function () {
  "use strict";
  const current = () => document.getElementById("lq-dashboard");
  async function refresh() {
    if (document.hidden) return;
    try {
      const response = await fetch(window.location.href, {
        credentials: "same-origin",
        headers: { Accept: "text/html" },
      });
      if (!response.ok) return;
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("lq-dashboard");
      const shown = current();
      if (fresh && shown) {
        shown.replaceChildren(...fresh.childNodes);
        shown.dataset.refreshedAt = String(Date.now());
      }
    } catch (error) {
      // A failed refresh leaves the charts as they were; the next one tries again.
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    const shown = current();
    if (!shown) return;
    const seconds = Number(shown.dataset.refreshSeconds) || 60;
    window.setInterval(refresh, seconds * 1000);
  });
})();
