/**
 * The Slack incoming-webhook format of an alert: `text` (the fallback of notifications) and one
 * `section` block with the same text in mrkdwn. Slack answers 200 `ok` to it.
 * @see https://api.slack.com/messaging/webhooks
 */

/** An alert event as webhooks receive it (`format: json` sends it as it is). */
export interface AlertEventBody {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

const pct = (f: unknown) => `${Math.round(Number(f) * 100)}%`;
const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : JSON.stringify(v));

/** One line saying what happened. */
export function alertText(e: AlertEventBody): string {
  const d = e.data;
  switch (e.type) {
    case 'budget.threshold': {
      const who = `${d.level === 'team' ? 'team' : 'key'} ${d.name ? `"${str(d.name)}" ` : ''}(${str(d.id)})`;
      const period = d.limit_reset && d.limit_reset !== 'never' ? ` ${str(d.limit_reset)}` : '';
      return `:warning: opinference: ${who} has spent $${str(d.spent)} of its $${str(d.limit)}${period} budget (${pct(d.fraction)} reached)`;
    }
    case 'breaker.opened':
      return `:red_circle: opinference: the circuit breaker of endpoint ${str(d.endpoint)} opened: requests go to other endpoints until it recovers`;
    case 'breaker.closed':
      return `:large_green_circle: opinference: the circuit breaker of endpoint ${str(d.endpoint)} closed: the endpoint serves again`;
    case 'records.unwritable':
      return `:rotating_light: opinference: generation records cannot be written on ${str(d.instance)}: ${str(d.problem)}`;
    case 'records.writable':
      return `:white_check_mark: opinference: generation records are written again on ${str(d.instance)}`;
    case 'error_rate.high':
      return `:chart_with_upwards_trend: opinference: ${pct(d.rate)} of the requests to ${str(d.model)} failed (${str(d.errors)} of ${str(d.requests)} in the last ${Math.round(Number(d.window_ms) / 60_000)} min; threshold ${pct(d.threshold)})`;
    case 'error_rate.normal':
      return `:white_check_mark: opinference: the error rate of ${str(d.model)} is back under ${pct(d.threshold)} (${str(d.errors)} of ${str(d.requests)})`;
    default:
      return `opinference: ${e.type} ${JSON.stringify(d)}`;
  }
}

/** The Slack message of an event. */
export function slackMessage(e: AlertEventBody): { text: string; blocks: { type: 'section'; text: { type: 'mrkdwn'; text: string } }[] } {
  const text = alertText(e);
  return { text, blocks: [{ type: 'section', text: { type: 'mrkdwn', text } }] };
}
