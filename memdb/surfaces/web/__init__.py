"""The dashboard of ``memdb serve``: server-rendered pages over the owner handle (needs the ``web`` extra).

``memdb.surfaces.web.app`` holds sign-in, sessions, CSRF and rendering; ``pages`` the pages;
``chart`` the inline SVG charts; ``templates/`` and ``static/`` ship as package data.
"""
