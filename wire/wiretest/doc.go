// Package wiretest holds test helpers for code that uses package wire:
// sample envelopes of every message, request and result type (Samples),
// rapid generators of envelopes (Envelope, Request, Result), the canonical
// form a value takes after a round trip through the codec (Canonical), and
// a form of an envelope that reflect.DeepEqual and testify can compare
// (Comparable). It is used by the tests of wire and by the fuzz targets,
// and is never imported by production code.
//
// It does not import wire: the canonical form is written here from the
// package documentation of wire, as an independent oracle.
package wiretest
