from tests.conftest import client_for


def test_login_page_renders(client, db):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b"Sign in" in response.content


def test_home_requires_login(client, db):
    response = client.get("/")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_member_home(cast):
    response = client_for(cast.member).get("/")
    assert response.status_code == 200
    assert b"Acme" in response.content
