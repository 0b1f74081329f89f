export { HtmlRenderer } from './html/renderer.ts'
