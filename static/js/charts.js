// Charts without a library and without inline styles or scripts (CSP): every
//   <div class="chart" data-chart-kind="line|bar" data-chart-source="ID" data-chart-title="...">
// is drawn as an inline SVG from the JSON of the element ID, written by {{ data|json_script:"ID" }}:
//   {"labels": ["...", ...], "series": [{"name": "...", "values": [1.5, "1234.50", null, ...]}], "unit": "NOK",
//    "titles": ["...", ...]}
// "titles" (optional): the full text of each label, for the tooltips, when the labels are short names.
// data-chart-labels-translate="no" marks the axis labels as names of code (translate="no"), not words.
// Without a value, or with only zeros where the container has data-chart-empty, the chart is that text instead
// (an axis from -1 to 1 around nothing says less than "No calls yet").
// Values are numbers or decimal strings; null leaves a gap. The strings are drawn as floats (a picture needs no
// exactness) but shown exactly as sent in the tooltips. Colours, strokes and sizes come from classes
// (portal.css: .chart-series-N, .chart-line, .chart-bar ...), positions from SVG attributes. The page must put
// the same figures in a data table beside the chart: the SVG is one picture to assistive technology (role=img).
(function () {
  "use strict";

  var SVG = "http://www.w3.org/2000/svg";
  var SERIES_CLASSES = 6; // .chart-series-0 ... -5 in portal.css; more series reuse them in turn
  var MARGIN = { top: 12, right: 16, bottom: 36, left: 72 };
  var MAX_X_LABELS = 6;
  var CHAR_WIDTH = 7.5; // px of one character of an axis label (.chart-tick: 12px), a digit's width or more
  var LABEL_GAP = 16; // px between two axis labels
  var MAX_POINTS_DRAWN = 62; // beyond this, points are drawn only where a value stands alone between gaps

  function node(name, attributes, parent) {
    var element = document.createElementNS(SVG, name);
    Object.keys(attributes || {}).forEach(function (key) {
      element.setAttribute(key, String(attributes[key]));
    });
    if (parent) {
      parent.appendChild(element);
    }
    return element;
  }

  function text(name, attributes, content, parent) {
    var element = node(name, attributes, parent);
    element.textContent = content;
    return element;
  }

  function toNumber(value) {
    if (value === null || value === undefined || value === "") {
      return null;
    }
    var number = typeof value === "number" ? value : parseFloat(String(value));
    return isFinite(number) ? number : null;
  }

  function language() {
    return document.documentElement.getAttribute("lang") || undefined;
  }

  // A round step for about ``count`` ticks; for whole numbers (counts of calls, payments) a whole step, never 2.5.
  function niceStep(span, count, whole) {
    var raw = span / Math.max(count, 1);
    var power = Math.pow(10, Math.floor(Math.log10(raw)));
    var fraction = raw / power;
    var quarter = !whole || power >= 10;
    var nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 2.5 && quarter ? 2.5 : fraction <= 5 ? 5 : 10;
    return whole ? Math.max(1, nice * power) : nice * power;
  }

  // The decimals a tick needs to be shown exactly (2.5 needs one): a label never rounds its tick.
  function decimalsOf(step) {
    for (var d = 0; d < 6; d++) {
      var scaled = step * Math.pow(10, d);
      if (Math.abs(scaled - Math.round(scaled)) < 1e-9 * Math.max(1, scaled)) {
        return d;
      }
    }
    return 6;
  }

  function scaleFor(values, includeZero) {
    var numbers = values.filter(function (v) {
      return v !== null;
    });
    var min = Math.min.apply(null, numbers);
    var max = Math.max.apply(null, numbers);
    if (includeZero) {
      min = Math.min(min, 0);
      max = Math.max(max, 0);
    }
    if (min === max) {
      var pad = Math.abs(min) * 0.1 || 1;
      min -= pad;
      max += pad;
    }
    var whole = numbers.every(function (v) {
      return Math.round(v) === v;
    });
    var step = niceStep(max - min, 5, whole);
    var low = Math.floor(min / step) * step;
    var high = Math.ceil(max / step) * step;
    var ticks = [];
    for (var t = low; t <= high + step / 2; t += step) {
      ticks.push(Math.abs(t) < step / 1e6 ? 0 : t);
    }
    return { low: low, high: high, ticks: ticks, decimals: decimalsOf(step) };
  }

  function formatter(decimals) {
    try {
      return new Intl.NumberFormat(language(), { maximumFractionDigits: decimals, minimumFractionDigits: 0 });
    } catch (error) {
      return { format: function (n) { return n.toFixed(decimals); } };
    }
  }

  function readData(container) {
    var source = document.getElementById(container.getAttribute("data-chart-source") || "");
    if (!source) {
      return null;
    }
    try {
      var data = JSON.parse(source.textContent);
      if (!data || !Array.isArray(data.labels) || !Array.isArray(data.series)) {
        return null;
      }
      return data;
    } catch (error) {
      return null;
    }
  }

  function legend(container, series) {
    var list = document.createElement("ul");
    list.className = "chart-legend";
    series.forEach(function (item, index) {
      var entry = document.createElement("li");
      var swatch = document.createElement("span");
      swatch.className = "chart-swatch chart-series-" + (index % SERIES_CLASSES);
      swatch.setAttribute("aria-hidden", "true");
      entry.appendChild(swatch);
      entry.appendChild(document.createTextNode(item.name || ""));
      list.appendChild(entry);
    });
    container.appendChild(list);
  }

  // The axis labels as drawn, measured: one that would touch its neighbour is removed (the count above is an
  // estimate from the labels' lengths). The first and the last label stay; the last wins over the one before it.
  function thinAxisLabels(axis) {
    var labels = Array.prototype.slice.call(axis.querySelectorAll("text"));
    var boxes = labels.map(function (label) {
      var box = label.getBBox();
      return { left: box.x, right: box.x + box.width };
    });
    function apart(a, b) {
      return b.left >= a.right + 4 || a.left >= b.right + 4;
    }
    var last = boxes.length - 1;
    var kept = [0];
    for (var i = 1; i < last; i++) {
      if (apart(boxes[kept[kept.length - 1]], boxes[i]) && apart(boxes[i], boxes[last])) {
        kept.push(i);
      }
    }
    if (last > 0 && apart(boxes[kept[kept.length - 1]], boxes[last])) {
      kept.push(last);
    }
    labels.forEach(function (label, index) {
      if (kept.indexOf(index) === -1) {
        axis.removeChild(label);
      }
    });
  }

  function draw(container) {
    var data = readData(container);
    var kind = container.getAttribute("data-chart-kind") === "bar" ? "bar" : "line";
    while (container.firstChild) {
      container.removeChild(container.firstChild);
    }
    if (!data) {
      container.setAttribute("data-chart-state", "unreadable");
      return;
    }
    var labels = data.labels.map(String);
    var titles = labels.map(function (label, i) {
      return Array.isArray(data.titles) && data.titles[i] ? String(data.titles[i]) : label;
    });
    var series = data.series.map(function (item) {
      var values = Array.isArray(item.values) ? item.values : [];
      return {
        name: String(item.name || ""),
        raw: values,
        values: labels.map(function (_label, i) {
          return toNumber(values[i]);
        }),
      };
    });
    var all = [];
    series.forEach(function (item) {
      all = all.concat(item.values);
    });
    var nothing = all.every(function (v) {
      return v === null || (v === 0 && container.hasAttribute("data-chart-empty"));
    });
    if (!labels.length || nothing) {
      container.setAttribute("data-chart-state", "empty");
      var empty = document.createElement("p");
      empty.className = "help";
      empty.textContent = container.getAttribute("data-chart-empty") || "";
      container.appendChild(empty);
      return;
    }

    var width = Math.max(280, Math.round(container.clientWidth || 640));
    var height = Math.round(Math.min(320, Math.max(200, width * 0.45)));
    var plot = {
      left: MARGIN.left,
      top: MARGIN.top,
      width: width - MARGIN.left - MARGIN.right,
      height: height - MARGIN.top - MARGIN.bottom,
    };
    var scale = scaleFor(all, kind === "bar");
    var unit = data.unit ? " " + data.unit : "";
    var format = formatter(scale.decimals);

    function y(value) {
      return plot.top + plot.height - ((value - scale.low) / (scale.high - scale.low)) * plot.height;
    }
    var band = plot.width / labels.length;
    function x(index) {
      if (kind === "bar") {
        return plot.left + band * (index + 0.5);
      }
      return labels.length === 1 ? plot.left + plot.width / 2 : plot.left + (plot.width * index) / (labels.length - 1);
    }

    var title = container.getAttribute("data-chart-title") || container.getAttribute("aria-label") || "";
    var svg = node("svg", {
      class: "chart-svg chart-" + kind,
      viewBox: "0 0 " + width + " " + height,
      width: width,
      height: height,
      role: "img",
      focusable: "false",
    });
    if (title) {
      var titleId = (container.id || container.getAttribute("data-chart-source")) + "-svg-title";
      text("title", { id: titleId }, title, svg);
      svg.setAttribute("aria-labelledby", titleId);
    }

    var grid = node("g", { class: "chart-grid" }, svg);
    scale.ticks.forEach(function (tick) {
      var position = y(tick);
      node("line", { x1: plot.left, x2: plot.left + plot.width, y1: position, y2: position }, grid);
      text(
        "text",
        { class: "chart-tick", x: plot.left - 6, y: position, "text-anchor": "end", "dominant-baseline": "middle" },
        format.format(tick),
        grid
      );
    });
    if (scale.low < 0 && scale.high > 0) {
      node("line", { class: "chart-zero", x1: plot.left, x2: plot.left + plot.width, y1: y(0), y2: y(0) }, svg);
    }
    // Lines (dates): a few labels, no more than fit side by side at their length (a phone has room for about
    // three dates). Bars (categories): as many as fit, about one per 64 px.
    var longest = labels.reduce(function (most, label) {
      return Math.max(most, label.length);
    }, 1);
    var fitting =
      kind === "bar"
        ? Math.max(1, Math.floor(plot.width / 64))
        : Math.max(2, Math.min(MAX_X_LABELS, Math.floor(plot.width / (longest * CHAR_WIDTH + LABEL_GAP))));
    var every = Math.max(1, Math.ceil(labels.length / fitting));
    var maxChars = kind === "bar" ? Math.max(3, Math.floor((band * every) / CHAR_WIDTH)) : 40;
    var axis = node("g", { class: "chart-axis" }, svg);
    if (container.getAttribute("data-chart-labels-translate") === "no") {
      axis.setAttribute("translate", "no"); // names of code (the bank's operations), not words to translate
    }
    labels.forEach(function (label, index) {
      var last = labels.length - 1;
      // Every few labels, and the last one unless it would touch the one before it.
      if (index % every !== 0 && !(index === last && last % every >= every / 2)) {
        return;
      }
      var anchor = kind === "line" && index === 0 ? "start" : kind === "line" && index === labels.length - 1 ? "end" : "middle";
      // A bar's label is a name whose end tells it apart ("GET balances"): a narrow bar keeps the end.
      var cut = kind === "bar" ? "\u2026" + label.slice(label.length - maxChars + 1) : label.slice(0, maxChars - 1) + "\u2026";
      var shown = label.length > maxChars ? cut : label;
      var tick = text("text", { class: "chart-tick", x: x(index), y: plot.top + plot.height + 18, "text-anchor": anchor }, shown, axis);
      if (shown !== titles[index]) {
        text("title", {}, titles[index], tick);
      }
    });

    series.forEach(function (item, s) {
      var cls = "chart-series-" + (s % SERIES_CLASSES);
      var group = node("g", { class: "chart-data " + cls }, svg);
      if (kind === "bar") {
        var inner = (band * 0.8) / series.length;
        var base = y(Math.min(Math.max(0, scale.low), scale.high));
        item.values.forEach(function (value, i) {
          if (value === null) {
            return;
          }
          var top = y(value);
          var bar = node(
            "rect",
            {
              class: "chart-bar " + cls,
              x: plot.left + band * i + band * 0.1 + inner * s,
              y: Math.min(top, base),
              width: Math.max(inner - 1, 1),
              height: Math.max(Math.abs(base - top), 1),
            },
            group
          );
          text("title", {}, titles[i] + ": " + String(item.raw[i]) + unit, bar);
        });
        return;
      }
      var path = "";
      var open = false;
      item.values.forEach(function (value, i) {
        if (value === null) {
          open = false;
          return;
        }
        path += (open ? " L " : " M ") + x(i).toFixed(2) + " " + y(value).toFixed(2);
        open = true;
      });
      if (path.indexOf("L") !== -1) {
        // A value standing alone between gaps has no line, only its point (below).
        node("path", { class: "chart-line " + cls, d: path.trim() }, group);
      }
      item.values.forEach(function (value, i) {
        if (value === null) {
          return;
        }
        var alone = (i === 0 || item.values[i - 1] === null) && (i === item.values.length - 1 || item.values[i + 1] === null);
        if (labels.length > MAX_POINTS_DRAWN && !alone) {
          return;
        }
        var point = node("circle", { class: "chart-point " + cls, cx: x(i), cy: y(value), r: 3 }, group);
        text("title", {}, titles[i] + ": " + String(item.raw[i]) + unit, point);
      });
    });

    container.appendChild(svg);
    thinAxisLabels(axis);
    container.setAttribute("data-chart-state", "drawn");
    container.setAttribute("data-chart-width", String(width));
    if (series.length > 1 || container.hasAttribute("data-chart-legend")) {
      legend(container, series);
    }
  }

  function drawAll() {
    Array.prototype.forEach.call(document.querySelectorAll(".chart[data-chart-source]"), draw);
  }

  var pending = null;
  window.addEventListener("resize", function () {
    window.clearTimeout(pending);
    pending = window.setTimeout(function () {
      Array.prototype.forEach.call(document.querySelectorAll(".chart[data-chart-state=drawn]"), function (chart) {
        if (Math.abs((chart.clientWidth || 0) - Number(chart.getAttribute("data-chart-width"))) > 8) {
          draw(chart);
        }
      });
    }, 150);
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
