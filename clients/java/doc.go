// Package javatest runs the Java client's JUnit 5 tests (clients/java) against a
// real fenceview server and real PostgreSQL and MariaDB servers. The Java code
// is compiled with the machine's javac and run with the JUnit console launcher
// of Debian's junit5 package; .ci/run installs both and the JDBC drivers.
package javatest
