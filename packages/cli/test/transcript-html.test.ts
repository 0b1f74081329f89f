import { describe, expect, it } from 'vitest'

import { renderMarkdown } from '../src/transcript/html/markdown.ts'
import { collapsible, lineCount } from '../src/transcript/html/text.ts'

describe('HTML transcript pieces', () => {
  it('Markdown keeps no raw HTML, no javascript: link and no image; links get rel', () => {
    const html = renderMarkdown(
      'Hi <script>alert(1)</script> <img src=x onerror=alert(1)> [ok](https://example.com) [bad](javascript:alert(1)) ![p](https://example.com/p.png)\u001b[31m',
    )
    expect(html).not.toMatch(/<script|<img|href="javascript:/i)
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(html).toContain('<a href="https://example.com" rel="noopener noreferrer nofollow">ok</a>')
    expect(html).toContain('[bad](javascript:alert(1))')
    expect(html).toContain('\\u001b[31m')
  })

  it('a long text shows its first 6 lines, the rest behind <details>, and a notice past the cap', () => {
    const text = Array.from({ length: 100 }, (_, index) => `row ${index + 1}`).join('\n')
    const html = collapsible(text, {
      className: 'output',
      cap: 200,
      fullTextCommand: 'agent-ledger cat s --seq 4',
    })
    expect(html).toMatch(
      /^<div class="collapsible output"><pre class="preview">\nrow 1\nrow 2\nrow 3\nrow 4\nrow 5\nrow 6\n<\/pre><details><summary>100 lines, 691 B: show more<\/summary><pre class="rest">row 7\n/,
    )
    expect(html).toContain('Full text: <code>agent-ledger cat s --seq 4</code>')
    expect(html).not.toContain('row 100')
    const short = collapsible('one\ntwo', { className: 'output', cap: 200, fullTextCommand: 'x' })
    expect(short).toBe('<pre class="output">\none\ntwo</pre>')
    expect(lineCount('a\nb\n')).toBe(2)
  })
})
