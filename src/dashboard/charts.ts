// Time-series bar charts (chart.js, only the parts used, bundled; no CDN).
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip, type ChartDataset } from 'chart.js';
import { h } from './dom';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip);
Chart.defaults.font.family = getComputedStyle(document.documentElement).getPropertyValue('--font-sans').trim() || 'system-ui, sans-serif';
Chart.defaults.color = '#4b5563';

/** Series colours: distinct, readable on white, in a fixed order. */
export const PALETTE = ['#2563eb', '#16a34a', '#f59e0b', '#dc2626', '#7c3aed', '#0891b2', '#db2777', '#65a30d', '#9ca3af'];

export interface Series {
  label: string;
  values: number[];
}

export interface BarChartSpec {
  title: string;
  labels: string[];
  series: Series[];
  /** Tick and tooltip format of a value. */
  format: (v: number) => string;
  /** Name for `data-chart` (tests and styles). */
  name: string;
  /** Counts: ticks only at whole numbers. */
  integer?: boolean;
}

/** A card holding a stacked bar chart. Call `destroy` when the page goes away. */
export function barChart(spec: BarChartSpec): { el: HTMLElement; destroy: () => void } {
  const canvas = h('canvas', { role: 'img', 'aria-label': spec.title });
  const el = h('section', { class: 'card chart-card', 'data-chart': spec.name, 'data-buckets': spec.labels.length }, h('h3', null, spec.title), h('div', { class: 'chart-box' }, canvas));
  const datasets: ChartDataset<'bar', number[]>[] = spec.series.map((s, i) => ({
    label: s.label,
    data: s.values,
    backgroundColor: PALETTE[i % PALETTE.length],
    borderRadius: 2,
    maxBarThickness: 48,
  }));
  const chart = new Chart(canvas, {
    type: 'bar',
    data: { labels: spec.labels, datasets },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      interaction: { mode: 'index', intersect: false },
      scales: {
        x: { stacked: true, grid: { display: false }, ticks: { maxRotation: 0, autoSkip: true, autoSkipPadding: 12 } },
        y: { stacked: true, beginAtZero: true, ticks: { callback: (v) => spec.format(Number(v)), maxTicksLimit: 6, precision: spec.integer ? 0 : undefined }, grid: { color: '#eef0f3' } },
      },
      plugins: {
        legend: { display: spec.series.length > 1, position: 'bottom', labels: { boxWidth: 12, boxHeight: 12 } },
        tooltip: {
          callbacks: { label: (ctx) => `${ctx.dataset.label ?? ''}: ${spec.format(Number(ctx.parsed.y))}` },
          filter: (item) => Number(item.parsed.y) !== 0,
        },
      },
    },
  });
  return { el, destroy: () => chart.destroy() };
}
