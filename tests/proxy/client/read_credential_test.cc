// read_credential: what docs/config.md promises for upstream_sasl's
// password_file and token_file: the first line is the credential, without
// its line end and trailing spaces; the rest of the file is ignored; a
// missing or empty file is an error naming the file, never its content.
#include "proxy/client/sasl_login.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace epochgate::proxy {
namespace {

std::string temp_file(const std::string& content) {
  char path[] = "/tmp/epochgate-credential-XXXXXX";
  int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  ::close(fd);
  return path;
}

TEST(ReadCredential, FirstLineWithoutLineEndOrTrailingSpaces) {
  for (const char* content : {"s3cret\n", "s3cret", "s3cret \t\r\n", "s3cret\nsecond line\n",
                              "s3cret  \r\n\nthird\n"}) {
    const std::string path = temp_file(content);
    std::string out, error;
    EXPECT_TRUE(read_credential("", path, "", "password", out, error)) << error;
    EXPECT_EQ(out, "s3cret") << "file content: " << content;
    ::unlink(path.c_str());
  }
}

TEST(ReadCredential, InnerSpacesAreKept) {
  const std::string path = temp_file("  pass word\n");
  std::string out, error;
  ASSERT_TRUE(read_credential("", path, "", "password", out, error)) << error;
  EXPECT_EQ(out, "  pass word");
  ::unlink(path.c_str());
}

TEST(ReadCredential, MissingOrEmptyFileNamesTheFileNotTheContent) {
  std::string out, error;
  EXPECT_FALSE(read_credential("", "/nonexistent/epochgate-password", "", "password", out, error));
  EXPECT_NE(error.find("/nonexistent/epochgate-password"), std::string::npos) << error;
  const std::string path = temp_file("\nsecret-on-line-two\n");
  EXPECT_FALSE(read_credential("", path, "", "password", out, error));
  EXPECT_NE(error.find("is empty"), std::string::npos) << error;
  EXPECT_EQ(error.find("secret-on-line-two"), std::string::npos) << error;
  ::unlink(path.c_str());
}

TEST(ReadCredential, EnvironmentVariableWhenNoFile) {
  ::setenv("EPOCHGATE_TEST_CREDENTIAL", "from-env", 1);
  std::string out, error;
  EXPECT_TRUE(read_credential("", "", "EPOCHGATE_TEST_CREDENTIAL", "password", out, error));
  EXPECT_EQ(out, "from-env");
  ::unsetenv("EPOCHGATE_TEST_CREDENTIAL");
  EXPECT_FALSE(read_credential("", "", "EPOCHGATE_TEST_CREDENTIAL", "password", out, error));
  EXPECT_NE(error.find("EPOCHGATE_TEST_CREDENTIAL"), std::string::npos);
}

}  // namespace
}  // namespace epochgate::proxy
