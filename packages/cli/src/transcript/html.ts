export { EVENT_SHARE, HtmlRenderer, PAGE_BUDGET_BYTES } from './html/renderer.ts'
