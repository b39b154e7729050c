// Package debugapi is the JSON the debug endpoints write (/debug/configz,
// /debug/syncz, /debug/adsz, /debug/version, /debug/list and their error
// bodies): types, and pure helpers that fill them, only. The discovery
// server writes these shapes and the wayfinder CLI reads them; keeping them
// here, apart from the server, lets the CLI decode the server's answers
// without linking the server (pilot/pkg/xds) or the assembly
// (pilot/pkg/bootstrap). It imports no server, source or translator code.
//
// Every list the server fills is sorted, so equal state gives byte-equal
// output; field names and tags are the wire format, so changing one is a
// change of the debug API.
package debugapi
