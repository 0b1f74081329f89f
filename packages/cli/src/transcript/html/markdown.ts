import MarkdownIt from 'markdown-it'

import { visibleControls } from '../../terminal-text.ts'

/**
 * Markdown for user and assistant text, through markdown-it with raw HTML off: a `<script>`
 * or `<img onerror>` in a message becomes escaped text, never an element. Images are not
 * rendered (the page loads nothing; an image shows as its Markdown text); links keep
 * markdown-it's URL check (no `javascript:`, `vbscript:`, `file:` or `data:` links) and open
 * nothing by themselves.
 */
const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false })
markdown.disable(['image'])

// Links from a session open nothing by themselves and tell the target nothing.
markdown.core.ruler.push('agent_ledger_link_rel', (state) => {
  for (const block of state.tokens) {
    for (const token of block.children ?? []) {
      if (token.type === 'link_open') token.attrSet('rel', 'noopener noreferrer nofollow')
    }
  }
})

/**
 * Renders untrusted Markdown to safe HTML (control and bidi characters made visible first).
 *
 * @param text - A message's text.
 * @returns HTML with no raw HTML from the text.
 */
export function renderMarkdown(text: string): string {
  return markdown.render(visibleControls(text))
}
