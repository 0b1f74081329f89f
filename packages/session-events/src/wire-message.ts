import { z } from 'zod'

/** A text part of a multi-part user message (OpenAI chat wire shape). */
const textContentPartSchema = z.object({ type: z.literal('text'), text: z.string() })

/** An image part of a multi-part user message (OpenAI chat wire shape). */
const imageContentPartSchema = z.object({
  type: z.literal('image_url'),
  image_url: z.object({ url: z.string(), detail: z.enum(['auto', 'low', 'high']).optional() }),
})

/** One part of a multi-part message. */
export const contentPartSchema = z.discriminatedUnion('type', [textContentPartSchema, imageContentPartSchema])
export type ContentPart = z.infer<typeof contentPartSchema>

/** A function call requested by the assistant; `arguments` is the raw JSON text the model produced. */
export const wireToolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
})
export type WireToolCall = z.infer<typeof wireToolCallSchema>

/** `{ role: 'system' }` message. */
export const systemMessageSchema = z.object({
  role: z.literal('system'),
  content: z.string(),
  name: z.string().optional(),
})
export type SystemMessage = z.infer<typeof systemMessageSchema>

/** `{ role: 'user' }` message; content is text or parts. */
export const userMessageSchema = z.object({
  role: z.literal('user'),
  content: z.union([z.string(), z.array(contentPartSchema)]),
  name: z.string().optional(),
})
export type UserMessage = z.infer<typeof userMessageSchema>

/** `{ role: 'assistant' }` message; `reasoning_content` is DeepSeek's reasoning field, kept as data. */
export const assistantMessageSchema = z.object({
  role: z.literal('assistant'),
  content: z.string().nullable(),
  tool_calls: z.array(wireToolCallSchema).optional(),
  reasoning_content: z.string().optional(),
  name: z.string().optional(),
})
export type AssistantMessage = z.infer<typeof assistantMessageSchema>

/** `{ role: 'tool' }` message answering one assistant tool call. */
export const toolMessageSchema = z.object({
  role: z.literal('tool'),
  tool_call_id: z.string().min(1),
  content: z.string(),
})
export type ToolMessage = z.infer<typeof toolMessageSchema>

/** Any chat message in the OpenAI wire shape, as sent to an OpenAI-compatible provider. */
export const wireMessageSchema = z.discriminatedUnion('role', [
  systemMessageSchema,
  userMessageSchema,
  assistantMessageSchema,
  toolMessageSchema,
])
export type WireMessage = z.infer<typeof wireMessageSchema>
