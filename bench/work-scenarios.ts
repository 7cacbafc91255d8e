/**
 * The scenarios of the instruction-count guard (bench/work-guard.ts, bench/work-count.ts): what
 * one request of each looks like. Changing one changes what its baseline means: update
 * bench/results/work-baseline.json in the same commit (`npm run bench:work -- --update --reason …`).
 */
import { prose } from './prose.js';

export interface WorkScenario {
  /** Key in the baseline file and in the table. */
  id: string;
  name: string;
  stream: boolean;
  /** Provider kind of the upstream: `anthropic` means the gateway translates chat to Messages and back. */
  kind: 'openai' | 'anthropic';
  /** The user message. */
  prompt: string;
}

export const WORK_SCENARIOS: readonly WorkScenario[] = [
  { id: 'chat', name: 'chat, non-streaming', stream: false, kind: 'openai', prompt: 'hi' },
  { id: 'chat-stream', name: 'chat, streaming (20 chunks)', stream: true, kind: 'openai', prompt: 'hi' },
  { id: 'chat-long', name: 'chat, non-streaming, 16 KB prompt', stream: false, kind: 'openai', prompt: prose(16_000) },
  { id: 'anthropic', name: 'chat → Anthropic Messages, non-streaming', stream: false, kind: 'anthropic', prompt: 'hi' },
  { id: 'anthropic-stream', name: 'chat → Anthropic Messages, streaming (20 deltas)', stream: true, kind: 'anthropic', prompt: 'hi' },
];
