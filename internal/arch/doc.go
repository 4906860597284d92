// Package arch holds the test that keeps llmdoctor's imports flowing one
// way (collectors → evidence → rules → advisor → report) and the generated
// import graph in docs/architecture.md.
package arch
