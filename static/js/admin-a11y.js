// Accessibility fixes to widgets of Django's admin, found by axe-core (the page tour, tests/browser/test_tour.py).
// Loaded by templates/admin/base_site.html on every admin page. The widgets are built by Django's own scripts
// (SelectFilter2.js, after the page has loaded), so the fixes run again whenever the page changes.
(function () {
  "use strict";

  function fieldLabel(input) {
    var row = input.closest(".form-row, .fieldBox");
    var label = row && row.querySelector("label");
    return label ? label.textContent.replace(/:\s*$/, "").trim() : "";
  }

  function fix(root) {
    // The search icons of the two-list selector carry an aria-label on a plain <span>: they are images.
    root.querySelectorAll(".help-tooltip.search-label-icon[aria-label]:not([role])").forEach(function (icon) {
      icon.setAttribute("role", "img");
    });
    // Date and time inputs of a date-time field have only the text "Date:" / "Time:" before them.
    root.querySelectorAll("p.datetime input:not([aria-label])").forEach(function (input) {
      var before = input.previousSibling;
      while (before && before.nodeType === Node.ELEMENT_NODE && before.tagName === "BR") {
        before = before.previousSibling;
      }
      var part = before && before.nodeType === Node.TEXT_NODE ? before.textContent.replace(/:\s*$/, "").trim() : "";
      var name = [fieldLabel(input), part].filter(Boolean).join(" – ");
      if (name) {
        input.setAttribute("aria-label", name);
      }
    });
  }

  function fixTables(root) {
    // Django's tabular inlines leave header cells empty (the object's own column, the missing "Delete?"
    // column of a read-only inline): a header with nothing to say is an ordinary cell (axe: empty-table-header).
    root.querySelectorAll(".inline-group thead th").forEach(function (cell) {
      if (cell.textContent.trim() || cell.querySelector("img[alt], [aria-label]")) {
        return;
      }
      var plain = document.createElement("td");
      plain.className = cell.className;
      if (cell.colSpan > 1) {
        plain.colSpan = cell.colSpan;
      }
      cell.replaceWith(plain);
    });
    // An inline wider than a phone scrolls sideways inside its box: the box takes the focus, so that the
    // keyboard scrolls it too (axe: scrollable-region-focusable).
    root.querySelectorAll(".inline-group").forEach(function (group) {
      if (group.scrollWidth > group.clientWidth + 1 && !group.hasAttribute("tabindex")) {
        group.setAttribute("tabindex", "0");
      }
    });
  }

  function start() {
    fixTables(document);
    fix(document);
    new MutationObserver(function () { fix(document); }).observe(document.body, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
}());
