export { DEFAULT_PAGE_BUDGET_BYTES, HtmlRenderer } from './html/renderer.ts'
export type { HtmlRendererOptions } from './html/renderer.ts'
export { escapeHtml } from './html/text.ts'
