import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { AlertDispatcher } from '../../alerts/alert-dispatcher.js';
import { ALERT_EVENT_TYPES, envName } from '../../config/alerts-schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { createAlertWebhook, deleteAlertWebhook, getAlertWebhook, listAlertWebhooks, listDeliveries, updateAlertWebhook, type AlertWebhook } from '../../store/alerts.js';
import { audited } from '../../store/audit-log.js';
import type { Database } from '../../store/schema.js';
import { actorOf, badRequest, parseBody, requireAdmin } from './admin-input.js';

/** Body of `POST /v1/alerts/webhooks` and `PATCH /v1/alerts/webhooks/{id}`: the config file's fields but `id`. */
const webhookBody = z
  .object({
    url: z.string().url('must be an absolute http(s) URL').refine((u) => /^https?:\/\//i.test(u), 'must be an http(s) URL'),
    format: z.enum(['json', 'slack']).default('json'),
    /** The environment variable (of every gateway process) holding the HMAC secret; null = unsigned. */
    secret_env: envName.nullable().default(null),
    events: z.array(z.enum(ALERT_EVENT_TYPES)).max(ALERT_EVENT_TYPES.length).default([]),
  })
  .strict();

const deliveriesQuery = z
  .object({
    webhook: z.string().min(1).max(200).optional(),
    type: z.enum(ALERT_EVENT_TYPES).optional(),
    status: z.enum(['pending', 'delivered', 'failed']).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  })
  .strict();

/**
 * Alerts (admin key, issue 23 item 5): `GET/POST /v1/alerts/webhooks`,
 * `GET/PATCH/DELETE /v1/alerts/webhooks/{id}` (API-made webhooks; those of the config file are
 * listed with `source: config` and change only with the file), every change audited; and
 * `GET /v1/alerts/deliveries`, the delivery log.
 */
export function registerAlertRoutes(app: FastifyInstance, rt: () => GatewayRuntime, db: Kysely<Database>, alerts: AlertDispatcher): void {
  const what = 'alert management';
  const configured = (): AlertWebhook[] => rt().config.alerts.webhooks.map((w) => ({ id: w.id, url: w.url, format: w.format, secret_env: w.secret_env ?? null, events: w.events, source: 'config', created_at: null }));
  const loadOr404 = async (id: string) => {
    const hook = await getAlertWebhook(db, id);
    if (hook) return hook;
    if (configured().some((w) => w.id === id)) throw new GatewayError('invalid_request', `webhook ${JSON.stringify(id)} comes from the config file (alerts.webhooks): change it there`, { param: 'id' });
    throw new GatewayError('not_found', `no alert webhook ${JSON.stringify(id)}`, { param: 'id' });
  };

  app.get('/v1/alerts/webhooks', async (req) => {
    requireAdmin(req, what);
    return { data: [...configured(), ...(await listAlertWebhooks(db))] };
  });

  app.get<{ Params: { id: string } }>('/v1/alerts/webhooks/:id', async (req) => {
    requireAdmin(req, what);
    const hook = configured().find((w) => w.id === req.params.id) ?? (await getAlertWebhook(db, req.params.id));
    if (!hook) throw new GatewayError('not_found', `no alert webhook ${JSON.stringify(req.params.id)}`, { param: 'id' });
    return { data: hook };
  });

  app.post('/v1/alerts/webhooks', async (req, reply) => {
    requireAdmin(req, what);
    const body = parseBody(webhookBody, req.body);
    const hook = await audited(db, actorOf(req), async (trx) => {
      const made = await createAlertWebhook(trx, body);
      return { result: made, change: { action: 'alert_webhook.create', targetType: 'alert_webhook', targetId: made.id, before: null, after: made } };
    });
    await alerts.refreshWebhooks();
    reply.code(201);
    return { data: hook };
  });

  app.patch<{ Params: { id: string } }>('/v1/alerts/webhooks/:id', async (req) => {
    requireAdmin(req, what);
    const current = await loadOr404(req.params.id);
    const body = parseBody(webhookBody.partial(), req.body);
    const hook = await audited(db, actorOf(req), async (trx) => {
      const after = await updateAlertWebhook(trx, current.id, body);
      return { result: after, change: after && { action: 'alert_webhook.update', targetType: 'alert_webhook', targetId: current.id, before: current, after } };
    });
    await alerts.refreshWebhooks();
    return { data: hook };
  });

  app.delete<{ Params: { id: string } }>('/v1/alerts/webhooks/:id', async (req) => {
    requireAdmin(req, what);
    const current = await loadOr404(req.params.id);
    await audited(db, actorOf(req), async (trx) => {
      const ok = await deleteAlertWebhook(trx, current.id);
      return { result: ok, change: ok ? { action: 'alert_webhook.delete', targetType: 'alert_webhook', targetId: current.id, before: current, after: null } : undefined };
    });
    await alerts.refreshWebhooks();
    return { data: { id: current.id, deleted: true } };
  });

  app.get('/v1/alerts/deliveries', async (req) => {
    requireAdmin(req, what);
    const r = deliveriesQuery.safeParse(req.query ?? {});
    if (!r.success) throw badRequest(r.error.issues);
    return { data: await listDeliveries(db, { webhookId: r.data.webhook, type: r.data.type, status: r.data.status, limit: r.data.limit }) };
  });
}
