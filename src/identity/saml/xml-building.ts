/** What the outgoing SAML documents are built with: the DOM (the serializer escapes every value), random IDs, UTC instants. */
import { randomBytes } from 'node:crypto';
import type { Document, Element } from '@xmldom/xmldom';

/** A random SAML ID: an NCName (it must not start with a digit), 160 bits. */
export function samlId(): string {
  return `_${randomBytes(20).toString('hex')}`;
}

/** xs:dateTime in UTC, whole seconds. */
export function instant(epochMs: number): string {
  return new Date(Math.floor(epochMs / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** Appends a namespaced child with attributes and optional text. */
export function childAdder(document: Document) {
  return (parent: Element, namespace: string, name: string, attributes: Record<string, string | undefined> = {}, text?: string): Element => {
    const child = document.createElementNS(namespace, name);
    setAttributes(child, attributes);
    if (text !== undefined) child.appendChild(document.createTextNode(text));
    parent.appendChild(child);
    return child;
  };
}

/** Sets each attribute that has a value; undefined ones (an optional InResponseTo) are left out. */
export function setAttributes(element: Element, attributes: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) element.setAttribute(name, value);
}
